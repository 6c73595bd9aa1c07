// Schema pieces shared by several modules.
import { Type } from 'typebox';

export const ErrorBody = Type.Object({ detail: Type.String() }, { $id: 'Error' });

export const Email = Type.String({ format: 'email', maxLength: 254 });
export const Url = Type.String({ format: 'uri', maxLength: 2048 });
export const Currency = Type.Union([Type.Literal('USD'), Type.Literal('EUR')]);
export const DecimalString = Type.String({ pattern: '^\\d+(\\.\\d{1,2})?$', maxLength: 18 });
export const IdParam = Type.Object({ id: Type.String({ maxLength: 64 }) });
