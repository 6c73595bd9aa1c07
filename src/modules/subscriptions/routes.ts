// Session endpoints of subscriptions: plans, and the subscriptions themselves (list, detail, cancel,
// the sandbox test clock). No API key reaches them (sessionAuth): subscriptions are managed in the
// dashboard only. The public signup (the plan, and the start of its checkout) is its own plugin.
import { Type } from 'typebox';
import { sessionAuth, sessionOf } from '../../http/auth.ts';
import { PUBLIC_BODY_LIMIT } from '../../http/public.ts';
import { ErrorResponse, limitedPerAddress } from '../../http/schemas.ts';
import type { App, RouteOptions } from '../../http/types.ts';
import { actorOf } from '../audit/record.ts';
import { limitPublicCaller } from '../checkout/rate-limit.ts';
import { CheckoutCreated } from '../checkout/schemas.ts';
import { EnvironmentQuery } from '../organizations/schemas.ts';
import { StartLinkBody } from '../payment-links/schemas.ts';
import {
  advanceSubscriptionClock,
  cancelSubscription,
  getSubscription,
  listSubscriptions,
  updateCardLink,
} from './manage.ts';
import { createPlan, getPlan, listPlans, updatePlan } from './plans.ts';
import {
  AdvanceClockBody,
  CancelBody,
  CreatePlanBody,
  Plan,
  PlanList,
  PublicPlan,
  SubscriptionDetail,
  SubscriptionListQuery,
  SubscriptionPage,
  UpdateCardLink,
  UpdatePlanBody,
} from './schemas.ts';
import { previewPlan, startSignup } from './signup.ts';

// No length limit on the id: anything that is not a plan id of this organization is a 404.
const IdParam = Type.Object({ id: Type.String() });

export async function subscriptionRoutes(app: App, options: RouteOptions) {
  await app.register(sessionRoutes, options);
  await app.register(publicRoutes, options);
}

const PLAN_NOT_FOUND = ErrorResponse('No plan has this id.');
const PLAN_GONE = ErrorResponse(
  'The plan is no longer offered (deactivated, or its organization is not active).',
);

/** The customer's signup, authorised by the plan id alone (the /subscribe/{plan id} page). */
async function publicRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('onRequest', async (request, reply) => limitPublicCaller(ctx, request, reply));
  const PlanParam = Type.Object({ plan: Type.String() });

  app.get(
    '/subscriptions/public/:plan/',
    {
      schema: {
        ...limitedPerAddress,
        params: PlanParam,
        response: { 200: PublicPlan, 404: PLAN_NOT_FOUND, 410: PLAN_GONE },
        description: 'What the signup page shows. 404 for an unknown plan, 410 for one no longer offered.',
      },
    },
    async (request) => previewPlan(ctx, request.params.plan),
  );

  app.post(
    '/subscriptions/public/:plan/start/',
    {
      bodyLimit: PUBLIC_BODY_LIMIT,
      schema: {
        ...limitedPerAddress,
        params: PlanParam,
        body: StartLinkBody,
        response: { 201: CheckoutCreated, 404: PLAN_NOT_FOUND, 410: PLAN_GONE },
        description:
          "The signup checkout: the hosted page saves the customer's card and charges the first period (or, with a trial, only saves the card). The subscription exists once that succeeds.",
      },
    },
    async (request, reply) => reply.code(201).send(await startSignup(ctx, request.params.plan, request.body)),
  );
}

async function sessionRoutes(app: App, { ctx }: RouteOptions) {
  app.addHook('preValidation', sessionAuth(ctx));

  app.get(
    '/subscriptions/plans/',
    { schema: { querystring: EnvironmentQuery, response: { 200: PlanList } } },
    async (request) =>
      listPlans(ctx, sessionOf(request).organizationId, request.query.environment ?? 'production'),
  );

  app.post(
    '/subscriptions/plans/',
    { schema: { body: CreatePlanBody, response: { 201: Plan } } },
    async (request, reply) =>
      reply
        .code(201)
        .send(await createPlan(ctx, sessionOf(request).organizationId, request.body, actorOf(request))),
  );

  app.get(
    '/subscriptions/plans/:id/',
    { schema: { params: IdParam, response: { 200: Plan } } },
    async (request) => getPlan(ctx, sessionOf(request).organizationId, request.params.id),
  );

  app.patch(
    '/subscriptions/plans/:id/',
    { schema: { params: IdParam, body: UpdatePlanBody, response: { 200: Plan } } },
    async (request) =>
      updatePlan(ctx, sessionOf(request).organizationId, request.params.id, request.body, actorOf(request)),
  );

  app.get(
    '/subscriptions/',
    { schema: { querystring: SubscriptionListQuery, response: { 200: SubscriptionPage } } },
    async (request) => listSubscriptions(ctx, sessionOf(request).organizationId, request),
  );

  app.get(
    '/subscriptions/:id/',
    { schema: { params: IdParam, response: { 200: SubscriptionDetail } } },
    async (request) => getSubscription(ctx, sessionOf(request).organizationId, request.params.id),
  );

  app.post(
    '/subscriptions/:id/cancel/',
    {
      // No body at all is the default, as `{}` is: cancel at the period's end.
      preValidation: (request, _reply, done) => {
        if (request.body === undefined || request.body === null) request.body = {};
        done();
      },
      schema: {
        params: IdParam,
        body: CancelBody,
        response: {
          200: SubscriptionDetail,
          409: ErrorResponse(
            'The subscription is already canceled, or a renewal of it is being charged (try again in a minute).',
          ),
        },
      },
    },
    async (request) =>
      cancelSubscription(
        ctx,
        sessionOf(request).organizationId,
        request.params.id,
        request.body?.at_period_end ?? true,
        actorOf(request),
      ),
  );

  app.post(
    '/subscriptions/:id/advance-clock/',
    { schema: { params: IdParam, body: AdvanceClockBody, response: { 200: SubscriptionDetail } } },
    async (request) =>
      advanceSubscriptionClock(
        ctx,
        sessionOf(request).organizationId,
        request.params.id,
        request.body.days,
        actorOf(request),
      ),
  );

  app.post(
    '/subscriptions/:id/update-card-link/',
    {
      schema: {
        params: IdParam,
        response: {
          200: UpdateCardLink,
          409: ErrorResponse('The subscription is canceled: there is no card to update.'),
        },
      },
    },
    async (request) =>
      updateCardLink(ctx, sessionOf(request).organizationId, request.params.id, actorOf(request)),
  );
}
