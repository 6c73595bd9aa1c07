import type { Generated, Selectable } from 'kysely';
import type { Role } from '../members/roles.ts';

export interface UsersTable {
  id: Generated<number>;
  organization_id: number;
  email: string;
  name: Generated<string>;
  password_hash: string;
  created_at: string;
  role: Generated<Role>;
  removed_at: string | null;
  totp_secret: string | null;
  totp_enabled_at: string | null;
  totp_last_step: number | null;
  last_login_at: string | null;
  /** Wrong second-factor codes in the window that began at two_factor_failures_since. */
  two_factor_failures: Generated<number>;
  two_factor_failures_since: string | null;
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
  authenticated_at: string | null;
  ip: string | null;
  user_agent: string | null;
}

export interface RecoveryCodesTable {
  id: Generated<number>;
  user_id: number;
  code_hash: string;
  created_at: string;
  used_at: string | null;
}

export interface LoginChallengesTable {
  id: Generated<number>;
  user_id: number;
  token_hash: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
  /** Codes tried against this challenge (counted before each is checked). */
  attempts: Generated<number>;
}

export interface PasswordResetsTable {
  id: Generated<number>;
  user_id: number;
  token_hash: string;
  created_at: string;
  expires_at: string;
  used_at: string | null;
}

/** Failed password checks of one key (an account from an address, an account, an address) in a window. */
export interface LoginFailuresTable {
  key_hash: string;
  scope: 'account_address' | 'account' | 'address';
  failures: number;
  window_started_at: string;
}

export type UserRow = Selectable<UsersTable>;

export interface AuthTables {
  users: UsersTable;
  sessions: SessionsTable;
  recovery_codes: RecoveryCodesTable;
  login_challenges: LoginChallengesTable;
  password_resets: PasswordResetsTable;
  login_failures: LoginFailuresTable;
}
