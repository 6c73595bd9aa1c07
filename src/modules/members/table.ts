import type { Generated, Selectable } from 'kysely';
import type { Role } from './roles.ts';

export interface InvitationsTable {
  id: Generated<number>;
  organization_id: number;
  email: string;
  role: Role;
  token_hash: string;
  invited_by: number | null;
  created_at: string;
  expires_at: string;
  accepted_at: string | null;
  revoked_at: string | null;
}

export type InvitationRow = Selectable<InvitationsTable>;

export interface MemberTables {
  invitations: InvitationsTable;
}
