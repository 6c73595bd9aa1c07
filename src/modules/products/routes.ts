// Session endpoints /api/products/ and /api/products/{id}/.

import { Type } from 'typebox';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { Currency, NoContent } from '../../http/schemas.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { actorOf } from '../audit/record.ts';
import { Product, ProductList } from './schemas.ts';
import { createProduct, deleteProduct, getProduct, listProducts, updateProduct } from './service.ts';

// No length limit on the id: anything that is not a product id of this organization is a 404.
const IdParam = Type.Object({ id: Type.String() });
const Price = Type.Union([Type.String({ maxLength: 20 }), Type.Number()]);
const Fields = {
  name: Type.String({ minLength: 1, maxLength: 200 }),
  description: Type.String({ maxLength: 2000 }),
  unit_price: Price,
  currency: Currency,
  is_active: Type.Boolean(),
};

export async function productRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('preValidation', sessionAuth(ctx));

  app.get('/products/', { schema: { response: { 200: ProductList } } }, async (request) =>
    listProducts(ctx, sessionOf(request).organizationId),
  );

  app.post(
    '/products/',
    {
      schema: {
        body: Type.Object(
          {
            name: Fields.name,
            description: Type.Optional(Fields.description),
            unit_price: Fields.unit_price,
            currency: Type.Optional(Fields.currency),
            is_active: Type.Optional(Fields.is_active),
          },
          { additionalProperties: false },
        ),
        response: { 201: Product },
      },
    },
    async (request, reply) =>
      reply
        .code(201)
        .send(await createProduct(ctx, sessionOf(request).organizationId, request.body, actorOf(request))),
  );

  app.get('/products/:id/', { schema: { params: IdParam, response: { 200: Product } } }, async (request) =>
    getProduct(ctx, sessionOf(request).organizationId, request.params.id),
  );

  app.patch(
    '/products/:id/',
    {
      schema: {
        params: IdParam,
        body: Type.Partial(Type.Object(Fields), { additionalProperties: false }),
        response: { 200: Product },
      },
    },
    async (request) =>
      updateProduct(
        ctx,
        sessionOf(request).organizationId,
        request.params.id,
        request.body,
        actorOf(request),
      ),
  );

  app.delete(
    '/products/:id/',
    { schema: { params: IdParam, response: { 204: NoContent } } },
    async (request, reply) => {
      await deleteProduct(ctx, sessionOf(request).organizationId, request.params.id, actorOf(request));
      return reply.code(204).send();
    },
  );
}
