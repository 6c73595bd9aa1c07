import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox';
import type { FastifyBaseLogger, FastifyInstance, RawServerDefault } from 'fastify';
import type { AppContext } from '../context.ts';
import type { Environment } from '../modules/api-keys/table.ts';
import type { ApiKeyHandlerFactory } from './auth.ts';

export type App = FastifyInstance<
  RawServerDefault,
  IncomingMessage,
  ServerResponse,
  FastifyBaseLogger,
  TypeBoxTypeProvider
>;

/** Options every module's route plugin receives. */
export interface RouteOptions {
  ctx: AppContext;
}

/** Options of API-key route plugins, registered once under /api and once under /sandbox/api. */
export interface ApiKeyRouteOptions extends RouteOptions {
  environment: Environment;
  requireKey: ApiKeyHandlerFactory;
}
