// Schemas of the team endpoints.
import { Type } from 'typebox';
import { Email, Nullable, Shape, Timestamp } from '../../http/schemas.ts';
import { Role } from '../auth/schemas.ts';

export const Member = Shape(
  {
    id: Type.Integer(),
    email: Type.String(),
    name: Type.String(),
    role: Role,
    two_factor_enabled: Type.Boolean(),
    created_at: Timestamp,
    last_login_at: Nullable(Timestamp),
  },
  'A member of the organization.',
);

export const Invitation = Shape(
  {
    id: Type.Integer(),
    email: Type.String(),
    role: Role,
    invited_by: Nullable(Type.Integer()),
    created_at: Timestamp,
    expires_at: Timestamp,
  },
  'A pending invitation (mailed; accepted with POST /api/auth/accept-invite/).',
);

export const MemberList = Shape(
  { members: Type.Array(Member), invitations: Type.Array(Invitation) },
  'Members and pending invitations.',
);

export const InviteBody = Type.Object({ email: Email, role: Role });
export const RoleBody = Type.Object({ role: Role });
export const AcceptInviteBody = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 100 }),
  password: Type.String({ minLength: 1, maxLength: 1024 }),
  name: Type.Optional(Type.String({ maxLength: 200 })),
});

export const Security = Shape(
  {
    require_two_factor: Type.Boolean({
      description:
        'Every member must have two-factor on; until they do, only their own account endpoints answer.',
    }),
  },
  'Security settings of the organization.',
);
