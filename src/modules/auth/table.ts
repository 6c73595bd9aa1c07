import type { Generated, Selectable } from 'kysely';

export interface UsersTable {
  id: Generated<number>;
  organization_id: number;
  email: string;
  name: Generated<string>;
  password_hash: string;
  created_at: string;
}

export interface SessionsTable {
  id: Generated<number>;
  token_hash: string;
  user_id: number;
  organization_id: number;
  created_at: string;
  last_seen_at: string;
  expires_at: string;
  revoked_at: string | null;
}

export type UserRow = Selectable<UsersTable>;

export interface AuthTables {
  users: UsersTable;
  sessions: SessionsTable;
}
