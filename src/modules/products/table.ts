import type { Generated, Selectable } from 'kysely';

export interface ProductsTable {
  id: Generated<number>;
  public_id: string;
  organization_id: number;
  name: string;
  description: Generated<string>;
  /** Minor units of `currency`. */
  unit_price: number;
  currency: 'USD' | 'EUR';
  is_active: Generated<number>;
  deleted_at: string | null;
  created_at: string;
  updated_at: string;
}

export type ProductRow = Selectable<ProductsTable>;

export interface ProductTables {
  products: ProductsTable;
}
