import { z } from 'zod'
import { SCOPES } from '../admin.ts'
import { listQuery, pushCampaignInput } from '../campaigns.ts'
import { eventLineSchema } from '../events.ts'
import { CHANGE_OPS, customerIdParam, emailLookupQuery } from '../profiles.ts'
import { pushRequestEnvelope, QUEUED_MESSAGE } from '../push.ts'
import { json, noContent, type Operation, type Param } from './operation.ts'

/** The public APIs (HTTP Basic with an org's API key and secret, or an app key for the SDK). */

const p = (description: string, example: string, schema: z.ZodType = z.string()): Param => ({
  schema,
  description,
  example,
})
const txParam = p(
  'the transaction id of the 202, exactly as given (43 characters)',
  'AAABogBRPT8AAAAAAAEKlMGxh5LfGssBb0miBj6fHRo',
)
const appKey = p('the app key (app id)', 'acme-ios')
const customer = p('the customer id', 'cust-42', customerIdParam)
const orgParam = p("the org id (must be the key's org)", '1', z.string().regex(/^[1-9][0-9]*$/))
const appParam = p("the app id (an app of the key's org)", 'acme-ios')
const idParam = (what: string) => p(`the ${what} id`, '12', z.string().regex(/^[1-9][0-9]*$/))

const transaction = z.object({ transaction_id: z.string() }).meta({ id: 'UploadAccepted' })
export const receiptSchema = z
  .object({
    transaction_id: z.string(),
    state: z.enum(['queued', 'processing', 'done']),
    received_at: z.string(),
    lines: z.number().int(),
    accepted: z.number().int(),
    rejected: z.number().int(),
    rejected_lines: z.array(
      z.object({
        line: z.number().int(),
        uuid: z.string().nullable(),
        reason: z.string(),
        detail: z.string(),
      }),
    ),
    stages: z
      .object({
        consumed_at: z.string(),
        parsed_at: z.string(),
        processed_at: z.string(),
        written_at: z.string(),
        recorded_at: z.string(),
      })
      .optional()
      .describe(
        'when each stage of the pipeline was done with a server-side upload (docs/events.md, "Receipts"); absent from SDK receipts and until the receipt row exists',
      ),
  })
  .meta({ id: 'UploadReceipt' })
const receipt = {
  transaction_id: 'AAABogBRPT8AAAAAAAEKlMGxh5LfGssBb0miBj6fHRo',
  state: 'done',
  received_at: '2026-11-23T13:00:00.000Z',
  lines: 2,
  accepted: 1,
  rejected: 1,
  rejected_lines: [
    { line: 2, uuid: null, reason: 'invalid_event_name', detail: 'event_name must be 1..128 characters' },
  ],
  stages: {
    consumed_at: '2026-11-23T13:00:00.048Z',
    parsed_at: '2026-11-23T13:00:00.051Z',
    processed_at: '2026-11-23T13:00:00.057Z',
    written_at: '2026-11-23T13:00:00.189Z',
    recorded_at: '2026-11-23T13:00:00.196Z',
  },
}
const eventExample = {
  schema_url: 'https://sluice.example/schemas/events/v0.json',
  app_uuid: 'acme-ios',
  customer_id: 'cust-42',
  event_name: 'Purchase',
  event_time: 1795300000000,
  uuid: '5b0c1f3e-8f0a-4c55-9a7e-0c2f6c1e9d11',
  attributes: { sku: 'A-1', qty: 2 },
  ltv_change: 299,
}
const sdkRow = z
  .looseObject({
    type: z.string().describe('s (session), e (event), c (close), …'),
    uuid: z.string().optional(),
  })
  .describe('One raw-log row per line (docs/events.md, "SDK uploads").')
const sdkExample = {
  type: 'e',
  uuid: '0d7f2b4e-1c3a-4f5b-8e9d-a1b2c3d4e5f6',
  install_uuid: 'i-42',
  at_millis: 1795300000000,
  name: 'Opened',
  customer_ids: { customer_id: 'cust-42' },
}

const profileBody = z
  .union([
    z.object({
      changes: z.array(
        z.looseObject({ op: z.enum(CHANGE_OPS), attr: z.string(), value: z.unknown().optional() }),
      ),
    }),
    z.object({
      attributes: z.record(z.string(), z.unknown()).describe('each key assigned; null deletes it'),
    }),
  ])
  .describe(
    'changes applied in order (assign, delete, increment, set-add, set-remove), or attributes to assign (docs/profiles.md)',
  )
const profileChangeExample = { changes: [{ op: 'assign', attr: 'plan', value: 'gold' }] }
const attributes = z.record(z.string(), z.unknown())
const profileSchema = z
  .object({
    attributes: attributes.describe("the customer's attributes"),
    vendor: z.object({
      attributes: attributes.describe('what Sluice knows from the SDK (app version, country, …)'),
    }),
    app_id: z.string().optional().describe('only on app-level profiles inside a customer'),
  })
  .meta({ id: 'Profile' })
const profileExample = {
  attributes: { plan: 'gold', $email: 'a@example.com' },
  vendor: { attributes: { country: 'fr' } },
}
const customerSchema = z.object({ id: z.string(), profiles: z.array(profileSchema) }).meta({ id: 'Customer' })
const customerExample = { id: 'cust-42', profiles: [profileExample] }

const pushBody = pushRequestEnvelope.extend({
  messages: z
    .array(z.looseObject({ alert: z.unknown().optional() }))
    .describe('one per target: {target, alert, ios, android, …} (docs/push.md)'),
})
const pushQueued = z
  .object({ message: z.literal(QUEUED_MESSAGE), request_id: z.string() })
  .meta({ id: 'PushQueued' })
const pushReport = z
  .object({
    app_id: z.string(),
    campaign_key: z.string(),
    requests: z.number().int(),
    targeted: z.number().int(),
    sent: z.number().int(),
    failed: z.number().int(),
    pending: z.number().int(),
    opened: z.number().int(),
    first_request_at: z.string(),
    last_request_at: z.string(),
  })
  .meta({ id: 'PushReport' })

const counts = {
  user_count: z.number().int(),
  has_push: z.number().int(),
  seen_last_thirty: z.number().int(),
}
const audienceBody = z
  .object({ name: z.string().min(1).max(200), target_rules: z.record(z.string(), z.unknown()) })
  .describe(
    'target_rules: behavior and profile rules (docs/audiences.md); checked with every issue listed (422)',
  )
const audienceExample = {
  name: 'Repeat buyers',
  target_rules: {
    behavior_profile_operator: 'and',
    behavior: {
      days: 30,
      rules: [{ rule_type: 'event', event_name: 'Purchase', count: 2, count_operator: 'at_least' }],
    },
  },
}
const audienceAnswer = z
  .object({
    id: z.number().int(),
    name: z.string(),
    created_at: z.string(),
    target_rules: z.unknown(),
    segmentation_count: z.object(counts),
  })
  .meta({ id: 'Audience' })
const audienceAnswerExample = {
  id: 12,
  name: 'Repeat buyers',
  created_at: '2026-11-23T13:00:00.000Z',
  target_rules: audienceExample.target_rules,
  segmentation_count: { user_count: 120, has_push: 80, seen_last_thirty: 110 },
}
const audienceListItem = z
  .object({
    id: z.number().int(),
    name: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
    deleted_at: z.string().nullable(),
    target_rules: z.unknown(),
    segmentation_count: z.object({ ...counts, updated_at: z.string().nullable() }),
  })
  .meta({ id: 'AudienceListItem' })
const segmentation = z
  .object({ segmentation_id: z.number().int(), ...counts, last_calculated_on: z.string().nullable() })
  .meta({ id: 'Segmentation' })
const segmentationExample = {
  segmentation_id: 12,
  user_count: 120,
  has_push: 80,
  seen_last_thirty: 110,
  last_calculated_on: null,
}
const audienceDetail = z
  .object({
    segmentation_id: z.string(),
    ...counts,
    updated_at: z.string().nullable(),
    target_rules: z.unknown(),
  })
  .meta({ id: 'AudienceDetail' })

const campaign = z
  .looseObject({ id: z.number().int(), name: z.string(), status: z.string(), creatives: z.unknown() })
  .meta({ id: 'Campaign' })
const pushCampaignExample = {
  name: 'Welcome',
  status: 'draft',
  goal: 'activate',
  audiences: { campaign_type: 'everyone' },
  schedule: { begin_immediately: { push_throttle_num_msgs: 0 } },
  creatives: [{ title: 'Hi', build_attributes: { push_message: 'Welcome!' } }],
}
const campaignExample = {
  id: 7,
  name: 'Welcome',
  status: 'draft',
  creatives: [{ id: 21, letter: 'A', title: 'Hi' }],
}
const campaignList = z
  .object({
    app_id: z.string(),
    records_count: z.number().int(),
    total_records: z.number().int(),
    campaigns: z.array(z.looseObject({ id: z.number().int(), name: z.string() })),
  })
  .meta({ id: 'CampaignList' })
const campaignListExample = {
  app_id: 'acme-ios',
  records_count: 1,
  total_records: 1,
  campaigns: [{ id: 7, name: 'Welcome', status: 'draft', channel: 'push' }],
}
const performance = z
  .looseObject({ campaign_id: z.number().int().optional() })
  .describe('deliveries, opens, conversions per variant and control, and lift')
const performanceExample = {
  campaign_id: 7,
  variants: [{ letter: 'A', sends: 100, opens: 12, conversions: 3 }],
}
const inappForm = z
  .object({
    data: z
      .string()
      .describe('the campaign as JSON (the same fields as a push campaign, in-app creatives and schedule)'),
  })
  .catchall(
    z.string().describe('a creative file (field names per docs/campaigns.md): zip, html, png, jpeg or gif'),
  )
const inappExample = {
  data: JSON.stringify({
    name: 'Welcome banner',
    status: 'draft',
    goal: 'activate',
    audiences: { campaign_type: 'everyone' },
    schedule: { begin_date: '2030-01-01T00:00:00Z' },
    creatives: [{ title: 'Banner', position: 'center' }],
  }),
}

const exportList = z.array(z.looseObject({})).describe('the exports enabled for the org, with their links')
const binary = (description: string, contentType: string) => ({ description, contentType })

const events = { tag: 'events' } as const
const basic = (scope: (typeof SCOPES)[number]) => ({ auth: 'basic' as const, scope })
const uploadOperation = (path: string): Operation[] => [
  {
    ...events,
    ...basic('events'),
    method: 'post',
    path,
    summary: 'Upload server-side events',
    description:
      'One JSON event per line (Content-Type application/json, or gzip as application/x-gzip); answered once the body is durable. Lines are validated later: read the receipt.',
    body: { schema: eventLineSchema, example: eventExample, description: 'one event per line' },
    responses: { 202: json(transaction, { transaction_id: receipt.transaction_id }, 'durable on the bus') },
    rateLimited: true,
    errors: [400, 413, 415, 503],
  },
  {
    ...events,
    ...basic('events'),
    method: 'get',
    path: `${path}/:transaction_id`,
    summary: "An upload's receipt",
    params: { transaction_id: txParam },
    responses: { 200: json(receiptSchema, receipt) },
    errors: [400, 404],
  },
]

const audienceBase = '/api/v6/orgs/:org_id/apps/:app_id/audiences'
const audienceParams = { org_id: orgParam, app_id: appParam }
const audience = { tag: 'audiences', ...basic('campaigns'), params: audienceParams } as const
const withId = { ...audienceParams, id: idParam('audience') }

const campaignOps = (channel: 'push' | 'inapp'): Operation[] => {
  const base = `/api/v6/orgs/:org_id/apps/:app_id/${channel}/campaigns`
  const common = { tag: 'campaigns', ...basic('campaigns'), params: audienceParams } as const
  const ids = { ...audienceParams, id: idParam('campaign') }
  const body =
    channel === 'push'
      ? { schema: pushCampaignInput, example: pushCampaignExample }
      : { schema: inappForm, example: inappExample, contentType: 'multipart/form-data' }
  return [
    {
      ...common,
      method: 'post',
      path: base,
      summary: `Create a ${channel} campaign`,
      body,
      responses: { 201: json(campaign, campaignExample) },
      errors: [400, 403, 413, 415, 422],
    },
    {
      ...common,
      method: 'get',
      path: base,
      summary: `List ${channel} campaigns`,
      query: listQuery(false),
      responses: { 200: json(campaignList, campaignListExample) },
      errors: [400, 403],
    },
    {
      ...common,
      params: ids,
      method: 'get',
      path: `${base}/:id`,
      summary: `Read a ${channel} campaign`,
      responses: { 200: json(campaign, campaignExample) },
      errors: [403, 404],
    },
    {
      ...common,
      params: ids,
      method: 'put',
      path: `${base}/:id`,
      summary: `Replace a ${channel} campaign`,
      body,
      responses: { 200: json(campaign, campaignExample) },
      errors: [400, 403, 404, 409, 422],
    },
    {
      ...common,
      params: ids,
      method: 'put',
      path: `${base}/:id/archive`,
      summary: `Archive a ${channel} campaign`,
      responses: { 200: json(campaign, { ...campaignExample, status: 'archived' }) },
      errors: [403, 404],
    },
    {
      ...common,
      params: ids,
      method: 'delete',
      path: `${base}/:id`,
      summary: `Delete a ${channel} campaign`,
      responses: { 204: noContent },
      errors: [403, 404, 409],
    },
    {
      ...common,
      params: ids,
      method: 'get',
      path: `${base}/:id/performance`,
      summary: `A ${channel} campaign's performance`,
      responses: { 200: json(performance, performanceExample) },
      errors: [403, 404],
    },
  ]
}

export const publicOperations: Operation[] = [
  {
    tag: 'operations',
    auth: 'none',
    method: 'get',
    path: '/healthz',
    summary: 'Alive',
    responses: { 200: json(z.object({ status: z.literal('ok') }), { status: 'ok' }) },
  },
  {
    tag: 'operations',
    auth: 'none',
    method: 'get',
    path: '/readyz',
    summary: 'Ready: every dependency answers (503 while draining)',
    responses: {
      200: json(
        z
          .object({ status: z.string(), draining: z.boolean(), checks: z.record(z.string(), z.boolean()) })
          .meta({ id: 'Readiness' }),
        { status: 'ready', draining: false, checks: { store: true, bus: true } },
      ),
      503: {
        description: 'not ready',
        schema: z.object({
          status: z.string(),
          draining: z.boolean(),
          checks: z.record(z.string(), z.boolean()),
        }),
      },
    },
  },
  {
    tag: 'operations',
    auth: 'none',
    method: 'get',
    path: '/metrics',
    summary: 'Prometheus metrics',
    responses: { 200: binary('metrics, Prometheus text format', 'text/plain') },
  },
  {
    tag: 'operations',
    auth: 'none',
    method: 'get',
    path: '/openapi.json',
    summary: 'This document',
    responses: { 200: json(z.looseObject({ openapi: z.string() }), { openapi: '3.1.0' }) },
  },
  {
    tag: 'auth',
    auth: 'basic',
    method: 'get',
    path: '/v1/auth/check',
    summary: 'Test an API key',
    responses: {
      200: json(z.object({ org_id: z.number().int(), scopes: z.array(z.enum(SCOPES)) }), {
        org_id: 1,
        scopes: ['events'],
      }),
    },
  },
  ...['v0', 'v1'].map((v): Operation => ({
    ...events,
    auth: 'none',
    method: 'get',
    path: `/schemas/events/${v}.json`,
    summary: `JSON Schema of a server-side event line (${v})`,
    responses: {
      200: json(z.looseObject({ type: z.literal('object') }), { type: 'object', properties: {} }),
    },
  })),
  ...['/v0/uploads', '/v1/uploads', '/events/v0/uploads', '/events/v1/uploads'].flatMap(uploadOperation),
  {
    ...events,
    auth: 'none',
    method: 'post',
    path: '/v1/sdk/apps/:app_key/uploads',
    summary: 'SDK upload (the app key in the path)',
    params: { app_key: appKey },
    body: { schema: sdkRow, example: sdkExample, description: 'one raw-log row per line' },
    responses: { 202: json(transaction, { transaction_id: receipt.transaction_id }) },
    rateLimited: true,
    errors: [400, 401, 413, 415, 503],
  },
  {
    ...events,
    auth: 'none',
    method: 'get',
    path: '/v1/sdk/apps/:app_key/uploads/:transaction_id',
    summary: "An SDK upload's receipt",
    params: { app_key: appKey, transaction_id: txParam },
    responses: { 200: json(receiptSchema, receipt) },
    errors: [400, 401, 404],
  },
  ...(
    [
      ['/v1/profiles/:customer_id', 'org'],
      ['/v1/apps/:app_key/profiles/:customer_id', 'app'],
    ] as const
  ).flatMap(([path, level]): Operation[] => {
    const params: Record<string, Param> =
      level === 'org' ? { customer_id: customer } : { app_key: appKey, customer_id: customer }
    const common = { tag: 'profiles', ...basic('profiles'), params, rateLimited: true } as const
    const change = (method: 'patch' | 'post'): Operation => ({
      ...common,
      method,
      path,
      summary: `Change a customer's ${level}-level profile`,
      body: { schema: profileBody, example: profileChangeExample },
      responses: { 202: json(z.object({ ignored_changes: z.array(z.unknown()) }), { ignored_changes: [] }) },
      errors: [400, 403, 413, 415],
    })
    return [
      {
        ...common,
        method: 'get',
        path,
        summary: `Read a customer's ${level}-level profile`,
        responses: { 200: json(profileSchema, profileExample) },
        errors: [404],
      },
      change('patch'),
      change('post'),
      {
        ...common,
        method: 'delete',
        path,
        summary: `Delete a customer's ${level}-level profile`,
        responses: { 204: noContent },
        errors: [403],
      },
    ]
  }),
  {
    tag: 'profiles',
    ...basic('profiles'),
    method: 'get',
    path: '/v1/customers/:customer_id',
    summary: "A customer's profiles at every level",
    params: { customer_id: customer },
    rateLimited: true,
    responses: { 200: json(customerSchema, customerExample) },
    errors: [404],
  },
  {
    tag: 'profiles',
    ...basic('profiles'),
    method: 'get',
    path: '/v1/customers',
    summary: 'Customers by email',
    query: emailLookupQuery,
    rateLimited: true,
    responses: {
      200: json(z.object({ customers: z.array(customerSchema) }), { customers: [customerExample] }),
    },
    errors: [400, 403],
  },
  {
    tag: 'push',
    ...basic('push'),
    method: 'post',
    path: '/v2/push/:app_id',
    summary: 'Send a push',
    description:
      'Targets: broadcast, customer_id, audience_id or profile. Queued durably, delivered by the push pipeline.',
    params: { app_id: appParam },
    body: {
      schema: pushBody,
      example: {
        request_id: 'welcome-42',
        campaign_key: 'welcome',
        target_type: 'customer_id',
        messages: [{ target: 'cust-42', alert: 'Welcome!' }],
      },
    },
    rateLimited: true,
    responses: { 202: json(pushQueued, { message: QUEUED_MESSAGE, request_id: 'welcome-42' }) },
    errors: [400, 403, 413],
  },
  {
    tag: 'push',
    ...basic('push'),
    method: 'get',
    path: '/v2/push/:app_id/reports/:campaign_key',
    summary: "A campaign key's report",
    params: { app_id: appParam, campaign_key: p('the campaign key', 'welcome') },
    responses: {
      200: json(pushReport, {
        app_id: 'acme-ios',
        campaign_key: 'welcome',
        requests: 1,
        targeted: 1,
        sent: 1,
        failed: 0,
        pending: 0,
        opened: 0,
        first_request_at: '2026-11-23T13:00:00.000Z',
        last_request_at: '2026-11-23T13:00:00.000Z',
      }),
    },
    errors: [403, 404],
  },
  {
    ...audience,
    method: 'post',
    path: audienceBase,
    summary: 'Create an audience (answers with its counts)',
    body: { schema: audienceBody, example: audienceExample },
    responses: { 201: json(audienceAnswer, audienceAnswerExample) },
    errors: [400, 403, 415, 422],
  },
  {
    ...audience,
    method: 'get',
    path: audienceBase,
    summary: "List an app's audiences with their counts",
    responses: { 200: json(z.array(audienceListItem), []) },
    errors: [403],
  },
  {
    ...audience,
    params: withId,
    method: 'get',
    path: `${audienceBase}/:id`,
    summary: 'Read an audience',
    responses: {
      200: json(audienceDetail, {
        segmentation_id: '12',
        user_count: 120,
        has_push: 80,
        seen_last_thirty: 110,
        updated_at: null,
        target_rules: {},
      }),
    },
    errors: [403, 404],
  },
  {
    ...audience,
    params: withId,
    method: 'put',
    path: `${audienceBase}/:id`,
    summary: 'Replace an audience',
    body: { schema: audienceBody, example: audienceExample },
    responses: { 200: json(audienceAnswer, audienceAnswerExample) },
    errors: [400, 403, 404, 422],
  },
  {
    ...audience,
    params: withId,
    method: 'patch',
    path: `${audienceBase}/:id`,
    summary: "Change an audience's name or rules",
    body: { schema: audienceBody.partial(), example: { name: 'Loyal buyers' } },
    responses: { 200: json(audienceAnswer, audienceAnswerExample) },
    errors: [400, 403, 404, 422],
  },
  {
    ...audience,
    params: withId,
    method: 'delete',
    path: `${audienceBase}/:id`,
    summary: 'Delete an audience',
    responses: { 204: noContent },
    errors: [403, 404],
  },
  {
    ...audience,
    params: withId,
    method: 'get',
    path: `${audienceBase}/:id/segmentation`,
    summary: "An audience's last counts",
    responses: { 200: json(segmentation, segmentationExample) },
    errors: [403, 404],
  },
  {
    ...audience,
    params: withId,
    method: 'post',
    path: `${audienceBase}/:id/segmentation`,
    summary: "Count an audience's members now",
    responses: {
      200: json(segmentation, segmentationExample),
      202: json(
        segmentation,
        segmentationExample,
        'not counted within the wait: the last counts; the count goes on',
      ),
    },
    errors: [403, 404, 503],
  },
  {
    ...audience,
    method: 'post',
    path: `${audienceBase}/preview`,
    summary: 'Count the members of target rules now, without saving them (an audience builder)',
    body: {
      schema: z
        .object({ target_rules: z.record(z.string(), z.unknown()) })
        .describe('target_rules as an audience takes them; checked with every issue listed (422)'),
      example: { target_rules: audienceExample.target_rules },
    },
    responses: {
      200: json(z.object({ ...counts, calculated_at: z.string() }).meta({ id: 'AudiencePreview' }), {
        user_count: 120,
        has_push: 80,
        seen_last_thirty: 110,
        calculated_at: '2026-11-23T13:00:00.000Z',
      }),
    },
    errors: [400, 403, 415, 422],
  },
  ...campaignOps('push'),
  ...campaignOps('inapp'),
  {
    tag: 'campaigns',
    ...basic('campaigns'),
    params: { ...audienceParams, id: idParam('campaign'), name: p('the file name', 'banner.zip') },
    method: 'get',
    path: '/api/v6/orgs/:org_id/apps/:app_id/inapp/campaigns/:id/files/:name',
    summary: "An in-app campaign's creative file",
    responses: { 200: binary('the file', 'application/octet-stream') },
    errors: [403, 404],
  },
  {
    tag: 'campaigns',
    ...basic('campaigns'),
    params: audienceParams,
    method: 'get',
    path: '/api/v6/orgs/:org_id/apps/:app_id/campaigns',
    summary: 'List campaigns of every channel',
    query: listQuery(false),
    responses: { 200: json(campaignList, campaignListExample) },
    errors: [400, 403],
  },
  {
    tag: 'campaigns',
    ...basic('campaigns'),
    params: audienceParams,
    method: 'get',
    path: '/api/v6/orgs/:org_id/apps/:app_id/campaigns/search',
    summary: 'Search campaigns by id or name',
    query: listQuery(true),
    responses: { 200: json(campaignList, campaignListExample) },
    errors: [400, 403],
  },
  {
    tag: 'campaigns',
    auth: 'none',
    method: 'get',
    path: '/v1/sdk/apps/:app_key/inapp',
    summary: "A device's live in-app campaigns (SDK)",
    params: { app_key: appKey },
    query: z.object({ install_uuid: z.string().optional(), device_type: z.string().optional() }).loose(),
    rateLimited: true,
    responses: {
      200: json(z.looseObject({ campaigns: z.array(z.looseObject({ id: z.number().int() })) }), {
        install_uuid: 'inst-1',
        device_type: 'phone',
        campaigns: [],
      }),
    },
    errors: [400, 401],
  },
  {
    tag: 'campaigns',
    auth: 'none',
    method: 'get',
    path: '/v1/sdk/apps/:app_key/inapp/assets/:sha256/:name',
    summary: 'An in-app creative file (SDK; its sha256 is in the path)',
    params: {
      app_key: appKey,
      sha256: p('the file sha256', 'ab'.repeat(32)),
      name: p('the file name', 'banner.zip'),
    },
    responses: { 200: binary('the file', 'application/octet-stream') },
    errors: [404],
  },
  ...(['audiences', 'profiles'] as const).map((kind): Operation => ({
    tag: 'exports',
    ...basic('exports'),
    method: 'get',
    path: `/v1/exports/${kind}`,
    summary: `List the org's ${kind} exports`,
    rateLimited: true,
    responses: { 200: json(exportList, []) },
  })),
  {
    tag: 'exports',
    ...basic('exports'),
    method: 'get',
    path: '/v1/exports/audiences/:audience_id/:identifier_type',
    summary: "An audience export's latest file (302 to a signed link)",
    params: {
      audience_id: idParam('audience'),
      identifier_type: p('idfa, gaid, email or customer_id', 'email'),
    },
    rateLimited: true,
    responses: {
      302: { description: 'to the signed, expiring file link', headers: { Location: 'the link' } },
    },
    errors: [403, 404],
  },
  {
    tag: 'exports',
    ...basic('exports'),
    method: 'get',
    path: '/v1/exports/profiles/:profiledb_id/:job_type',
    summary: "A profile export's latest file (302 to a signed link)",
    params: { profiledb_id: idParam('profile db'), job_type: p('profile or profile_changes', 'profile') },
    rateLimited: true,
    responses: {
      302: { description: 'to the signed, expiring file link', headers: { Location: 'the link' } },
    },
    errors: [403, 404],
  },
  {
    tag: 'exports',
    ...basic('exports'),
    method: 'get',
    path: '/v1/exports/analytics/logs/:app_uuid/:year/:month/:day/:hour',
    summary: "An hour's event log file (302 to a signed link)",
    params: {
      app_uuid: appParam,
      year: p('year', '2026'),
      month: p('month', '11'),
      day: p('day', '23'),
      hour: p('hour (UTC)', '13'),
    },
    rateLimited: true,
    responses: {
      302: { description: 'to the signed, expiring file link', headers: { Location: 'the link' } },
    },
    errors: [403, 404],
  },
  {
    tag: 'exports',
    auth: 'none',
    method: 'get',
    path: '/files/exports/*',
    summary: 'An export file, by its signed link (expires, sig)',
    params: { path: p('the file path of the link', 'audiences/1/3/2026-11-23.csv.gz') },
    query: z.object({ expires: z.string(), sig: z.string() }),
    responses: { 200: binary('the file', 'application/octet-stream') },
    errors: [403, 404],
  },
  ...importOperations(),
]

/** Imports (docs/imports.md): bodies are CSV or JSON lines, plain or gzip, up to 1 GiB. */
function importOperations(): Operation[] {
  const importIdParam = p('the import id', 'xljAmpkUAWM4R0PbFZEKFQ7W6cp')
  const csvBody = {
    schema: z.string(),
    example: 'customer_id,plan,age,renewal:date,tags:set\ncust-42,gold,41,2025-12-31,vip|beta\n',
    contentType: 'text/csv',
    description:
      'CSV with a header (or JSON lines as application/x-ndjson); gzip with Content-Encoding: gzip',
  }
  const accepted = json(
    z.object({
      import_id: z.string(),
      state: z.string(),
      audience_id: z.number().int().optional(),
      duplicate: z.boolean().optional(),
    }),
    { import_id: 'xljAmpkUAWM4R0PbFZEKFQ7W6cp', state: 'queued' },
    'the body is durable; the import is queued',
  )
  const receipt = json(
    z.looseObject({
      import_id: z.string(),
      kind: z.enum(['profiles', 'audience']),
      state: z.enum(['queued', 'processing', 'read', 'done', 'failed']),
      rows_read: z.number().int(),
      rows_applied: z.number().int(),
      rows_ignored: z.number().int(),
      rows_rejected: z.number().int(),
      rejected_rows: z.array(z.looseObject({ line: z.number().int(), reason: z.string() })),
    }),
    {
      import_id: 'xljAmpkUAWM4R0PbFZEKFQ7W6cp',
      kind: 'profiles',
      state: 'done',
      rows_read: 2,
      rows_applied: 1,
      rows_ignored: 0,
      rows_rejected: 1,
      rejected_rows: [
        { line: 3, customer_id: 'c4', reason: 'plan: string value is longer than 255 characters' },
      ],
    },
  )
  const profiles = { tag: 'imports', ...basic('profiles') } as const
  return [
    {
      ...profiles,
      method: 'post',
      path: '/v1/imports/profiles',
      summary: 'Import org-level profiles',
      body: csvBody,
      responses: { 202: accepted },
      errors: [400, 403, 413, 415],
    },
    {
      ...profiles,
      method: 'post',
      path: '/v1/apps/:app_id/imports/profiles',
      summary: "Import an app's profiles",
      params: { app_id: appKey },
      body: csvBody,
      responses: { 202: accepted },
      errors: [400, 403, 413, 415],
    },
    {
      ...profiles,
      method: 'get',
      path: '/v1/imports/:id',
      summary: 'The receipt of a profile import',
      params: { id: importIdParam },
      responses: { 200: receipt },
      errors: [404],
    },
    {
      ...audience,
      method: 'post',
      path: `${audienceBase}/imports`,
      summary: 'Import the members of a static audience (create, replace or add)',
      query: z.object({
        name: z.string().optional(),
        audience_id: z.string().optional(),
        mode: z.enum(['replace', 'add']).optional(),
        id_type: z.enum(['customer_id', 'email', 'install_id']).optional(),
      }),
      body: { ...csvBody, example: 'customer_id\ncust-42\ncust-43\n' },
      responses: { 202: accepted },
      errors: [400, 403, 404, 413, 415, 422],
    },
    {
      ...audience,
      method: 'get',
      path: `${audienceBase}/imports/:id`,
      summary: 'The receipt of an audience import',
      params: { ...audienceParams, id: importIdParam },
      responses: { 200: receipt },
      errors: [403, 404],
    },
  ]
}
