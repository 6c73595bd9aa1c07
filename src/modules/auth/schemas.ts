// Request and response schemas of the session and account endpoints.
import { Type } from 'typebox';
import { Email, Nullable, Shape, Timestamp } from '../../http/schemas.ts';
import { ROLES } from '../members/roles.ts';

export const Role = Type.Union(
  [
    Type.Literal('owner'),
    Type.Literal('admin'),
    Type.Literal('developer'),
    Type.Literal('support'),
    Type.Literal('viewer'),
  ],
  { description: `One of ${ROLES.join(', ')}.` },
);

const sessionFields = {
  expires_at: { ...Timestamp, description: 'When the session ends unless it is used before (idle expiry).' },
  user: Shape({ id: Type.Integer(), email: Type.String(), name: Type.String() }),
  organization: Shape({ id: Type.Integer(), slug: Type.String(), name: Type.String() }),
  role: Role,
  two_factor_enabled: Type.Boolean(),
  two_factor_setup_required: Type.Boolean({
    description:
      'The organization requires two-factor and this member has not set it up: only the own-account endpoints answer until they do.',
  }),
};

/** POST /auth/login/ (and /auth/login/2fa/, /auth/accept-invite/): the token is also set as the cookie kassa_session. */
export const LoginResult = Shape(
  { token: Type.String({ description: 'Send as Authorization: Token <token>.' }), ...sessionFields },
  'A new dashboard session.',
);

export const TwoFactorChallenge = Shape(
  {
    two_factor_required: Type.Literal(true),
    challenge: Type.String({ description: 'Send with a code to POST /api/auth/login/2fa/.' }),
    expires_at: Timestamp,
  },
  'The password was right and the user has two-factor: the login continues at /api/auth/login/2fa/.',
);

export const LoginAnswer = Type.Union([LoginResult, TwoFactorChallenge]);

/** GET /auth/me/ */
export const CurrentSession = Shape(sessionFields, 'The current session, without its token.');

const Password = Type.String({ minLength: 1, maxLength: 1024 });
const Code = Type.String({
  minLength: 1,
  maxLength: 40,
  description: 'A six-digit TOTP code, or a recovery code.',
});

export const LoginBody = Type.Object({ email: Email, password: Password });
export const SecondStepBody = Type.Object({
  challenge: Type.String({ minLength: 1, maxLength: 100 }),
  code: Code,
});
export const ConfirmBody = Type.Object(
  { password: Type.Optional(Password), code: Type.Optional(Code) },
  { description: 'Either the password or a second-factor code.' },
);
export const PasswordChangeBody = Type.Object({ current_password: Password, new_password: Password });
export const PasswordResetBody = Type.Object({ email: Email });
export const PasswordResetConfirmBody = Type.Object({
  token: Type.String({ minLength: 1, maxLength: 100 }),
  new_password: Password,
});
export const CodeBody = Type.Object({ code: Code });

export const Accepted = Shape({ message: Type.String() }, 'Accepted.');
export const Confirmed = Shape(
  { authenticated_at: Timestamp },
  'The session counts as recent for 10 minutes.',
);
export const TwoFactorSetup = Shape(
  { secret: Type.String({ description: 'Base32.' }), otpauth_url: Type.String() },
  'Scan otpauth_url (as a QR code) or type the secret into an authenticator app, then enable with a code.',
);
export const RecoveryCodes = Shape(
  { recovery_codes: Type.Array(Type.String(), { minItems: 10, maxItems: 10 }) },
  'Ten single-use recovery codes, shown once.',
);

export const SessionList = Type.Array(
  Shape({
    id: Type.Integer(),
    created_at: Timestamp,
    last_seen_at: Timestamp,
    ip: Nullable(Type.String()),
    user_agent: Nullable(Type.String()),
    current: Type.Boolean(),
  }),
  { description: "The user's live sessions, most recently used first." },
);
