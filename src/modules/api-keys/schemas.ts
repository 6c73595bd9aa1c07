// Response schemas of the API-key endpoints: the key record, and the raw key shown once.
import { Type } from 'typebox';
import { Environment, Nullable, Shape, Timestamp } from '../../http/schemas.ts';

const keyFields = {
  id: Type.Integer(),
  name: Type.String(),
  prefix: Type.String({ description: 'The first 16 characters of the raw key.' }),
  scopes: Type.Array(Type.String(), { description: 'Empty: every scope (legacy).' }),
  environment: Environment,
  status: Type.Enum(['active', 'revoked']),
  created_at: Timestamp,
  last_used_at: Nullable(Timestamp),
  revoked_at: Nullable(Timestamp),
};

export const ApiKey = Shape(keyFields, 'An API key; the raw secret is never included.');

export const ApiKeyList = Type.Array(ApiKey, {
  description: 'Every key of the organization, both environments.',
});

/** Creation and rotation: the only time the raw key is shown. */
export const ApiKeyIssued = Shape(
  { ...keyFields, raw_key: Type.String({ description: 'The secret, shown this once.' }) },
  'The new key with its raw secret, shown once.',
);
