// Response schemas of the catalog endpoints.
import { Type } from 'typebox';
import { Currency, Money, Shape, Timestamp } from '../../http/schemas.ts';

export const Product = Shape(
  {
    id: Type.String({ description: 'prod_ + 14 base62 characters.' }),
    name: Type.String(),
    description: Type.String(),
    unit_price: Money,
    currency: Currency,
    is_active: Type.Boolean(),
    created_at: Timestamp,
    updated_at: Timestamp,
  },
  'A catalog product.',
);

export const ProductList = Type.Array(Product, { description: 'The catalog, newest first.' });
