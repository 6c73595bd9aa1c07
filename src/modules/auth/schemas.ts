// Response schemas of the session endpoints.
import { Type } from 'typebox';
import { Shape, Timestamp } from '../../http/schemas.ts';

const sessionFields = {
  expires_at: { ...Timestamp, description: 'When the session ends unless it is used before (idle expiry).' },
  user: Shape({ id: Type.Integer(), email: Type.String(), name: Type.String() }),
  organization: Shape({ id: Type.Integer(), slug: Type.String(), name: Type.String() }),
};

/** POST /auth/login/: the token is also set as the HttpOnly cookie kassa_session. */
export const LoginResult = Shape(
  { token: Type.String({ description: 'Send as Authorization: Token <token>.' }), ...sessionFields },
  'A new dashboard session.',
);

/** GET /auth/me/ */
export const CurrentSession = Shape(sessionFields, 'The current session, without its token.');
