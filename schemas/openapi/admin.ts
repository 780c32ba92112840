import { z } from 'zod'
import { createAppBody, createKeyBody, createOrgBody, deadLettersQuery, SCOPES } from '../admin.ts'
import { enableExportBody, exportPlanBody, refreshExportBody } from '../exports.ts'
import { json, noContent, type Operation, type Param } from './operation.ts'

const orgId: Param = { schema: z.string().regex(/^[1-9][0-9]*$/), description: 'the org id', example: '1' }
const exportId: Param = {
  schema: z.string().regex(/^[1-9][0-9]*$/),
  description: 'the export id',
  example: '3',
}
const platform: Param = {
  schema: z.enum(['ios', 'android', 'all']),
  description: 'the platform the transport serves',
  example: 'ios',
}
const iso = z.string().describe('ISO 8601 time, UTC')

export const orgSchema = z
  .object({ id: z.number().int(), name: z.string(), profiledb_id: z.number().int() })
  .meta({ id: 'Org' })
export const appSchema = z
  .object({ app_id: z.string(), org_id: z.number().int(), name: z.string(), profiledb_id: z.number().int() })
  .meta({ id: 'App' })
const scopes = z.array(z.enum(SCOPES))
export const keySchema = z
  .object({ api_key: z.string(), scopes, revoked: z.boolean() })
  .meta({ id: 'ApiKey' })
const newKey = z
  .object({ api_key: z.string(), api_secret: z.string().describe('shown only in this answer'), scopes })
  .meta({ id: 'NewApiKey' })
export const jobRunSchema = z
  .object({
    job: z.string(),
    period_start: z.string(),
    ran_at: z.string(),
    status: z.number().int().describe('200 when the run succeeded, 500 when it threw'),
    output: z.unknown(),
    error: z.string().optional(),
  })
  .meta({ id: 'JobRun' })
export const deadLetterSchema = z
  .object({
    id: z.string(),
    stage: z.string(),
    topic: z.string(),
    partition: z.number().int(),
    offset: z.string(),
    key: z.string().nullable(),
    headers: z.record(z.string(), z.string()),
    error: z.string(),
    attempts: z.number().int(),
    produced_at: z.string(),
    dead_at: z.string(),
    replayed_at: z.string().nullable(),
    value_bytes: z.number().int(),
    value: z.string().nullable().describe("the record's bytes, base64 (null in a listing above 64 KB)"),
    preview: z.string().nullable().describe('the first 1 KB as text, when printable UTF-8'),
  })
  .meta({ id: 'DeadLetter' })
const replayed = z
  .object({
    id: z.string(),
    topic: z.string(),
    partition: z.number().int(),
    key: z.string().nullable(),
    headers: z.record(z.string(), z.string()),
    value_bytes: z.number().int(),
    replayed_at: z.string(),
  })
  .meta({ id: 'ReplayedDeadLetter' })
export const exportJobSchema = z
  .object({
    id: z.number().int(),
    org_id: z.number().int(),
    source_type: z.string(),
    source_id: z.string(),
    job_type: z.string(),
    name: z.string(),
    app_id: z.string(),
    state: z.string().describe('enabled, unavailable (idle too long, or its audience deleted) or disabled'),
    enabled_at: iso,
    disabled_at: iso.nullable(),
    last_requested_at: iso.nullable(),
    unavailable_after: iso.nullable(),
    latest_file: z
      .object({
        file_key: z.string(),
        rows: z.number().int(),
        bytes: z.number().int(),
        generated_at: iso,
        expire_at: iso,
      })
      .nullable(),
  })
  .meta({ id: 'ExportJob' })
const transport = z
  .looseObject({
    platform: z.string(),
    kind: z.string(),
    settings: z.record(z.string(), z.unknown()).describe('secrets masked'),
    updated_at: z.string().nullable().optional(),
    default: z.boolean().optional(),
  })
  .meta({ id: 'PushTransport' })
const transports = z
  .object({ app_id: z.string(), transports: z.array(transport) })
  .meta({ id: 'PushTransports' })

const org = { id: 1, name: 'Acme', profiledb_id: 1 }
const app = { app_id: 'acme-ios', org_id: 1, name: 'Acme iOS', profiledb_id: 2 }
const letter = {
  id: '7f0c1c1e-4d7e-4c3a-9a57-0a1d2b3c4d5e',
  stage: 'ingestion',
  topic: 'sluice.uploads',
  partition: 0,
  offset: '42',
  key: null,
  headers: { tx: 'Yx2…' },
  error: 'block does not decode',
  attempts: 1,
  produced_at: '2026-11-23T13:00:00.000Z',
  dead_at: '2026-11-23T13:00:01.000Z',
  replayed_at: null,
  value_bytes: 12,
  value: 'bm90IGpzb24=',
  preview: 'not json',
}
const exportJob = {
  id: 3,
  org_id: 1,
  source_type: 'audiences',
  source_id: '12',
  job_type: 'email',
  name: 'Lapsed buyers',
  app_id: 'acme-ios',
  state: 'enabled',
  enabled_at: '2026-11-23T13:00:00.000Z',
  disabled_at: null,
  last_requested_at: null,
  unavailable_after: '2027-01-07T13:00:00.000Z',
  latest_file: null,
}
const fileTransports = {
  app_id: 'acme-ios',
  transports: [
    {
      platform: 'ios',
      kind: 'webhook',
      settings: { url: 'https://hooks.example.com/push' },
      updated_at: '2026-11-23T13:00:00.000Z',
    },
  ],
}

const admin = { tag: 'admin', auth: 'admin' } as const

/** The admin API (/admin/v1, bearer admin token): orgs, apps, keys, jobs, dead letters, exports, push transports. */
export const adminOperations: Operation[] = [
  {
    ...admin,
    method: 'post',
    path: '/admin/v1/orgs',
    summary: 'Create an org',
    description:
      'Applied by the control plane; the answer waits for it (503 with Retry-After past SLUICE_CONTROL_WAIT_MS).',
    body: { schema: createOrgBody, example: { name: 'Acme' } },
    responses: { 201: json(orgSchema, org, 'the org, with its ids') },
    errors: [400, 503],
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/v1/orgs',
    summary: 'List orgs',
    responses: { 200: json(z.array(orgSchema), [org]) },
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/v1/orgs/:org_id',
    summary: 'Read an org',
    params: { org_id: orgId },
    responses: { 200: json(orgSchema, org) },
    errors: [400, 404],
  },
  {
    ...admin,
    method: 'post',
    path: '/admin/v1/orgs/:org_id/apps',
    summary: 'Create an app',
    description: '`app_id` (the app key) is generated when absent.',
    params: { org_id: orgId },
    body: { schema: createAppBody, example: { name: 'Acme iOS', app_id: 'acme-ios' } },
    responses: { 201: json(appSchema, app) },
    errors: [400, 404, 409, 503],
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/v1/orgs/:org_id/apps',
    summary: "List an org's apps",
    params: { org_id: orgId },
    responses: { 200: json(z.array(appSchema), [app]) },
    errors: [400, 404],
  },
  {
    ...admin,
    method: 'post',
    path: '/admin/v1/orgs/:org_id/keys',
    summary: 'Create an API key',
    description: 'The secret is shown only in this answer. Scopes default to all.',
    params: { org_id: orgId },
    body: { schema: createKeyBody, example: { scopes: ['events', 'profiles'] } },
    responses: {
      201: json(newKey, { api_key: 'k_3hT…', api_secret: 's_9Qp…', scopes: ['events', 'profiles'] }),
    },
    errors: [400, 404, 503],
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/v1/orgs/:org_id/keys',
    summary: "List an org's API keys",
    params: { org_id: orgId },
    responses: { 200: json(z.array(keySchema), [{ api_key: 'k_3hT…', scopes: ['events'], revoked: false }]) },
    errors: [400, 404],
  },
  {
    ...admin,
    method: 'delete',
    path: '/admin/v1/orgs/:org_id/keys/:api_key',
    summary: 'Revoke an API key',
    description: 'Every edge stops accepting the key within SLUICE_KEY_CACHE_SECONDS.',
    params: { org_id: orgId, api_key: { schema: z.string(), description: 'the API key', example: 'k_3hT…' } },
    responses: { 204: noContent },
    errors: [400, 404, 503],
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/v1/jobs',
    summary: 'Latest run of each scheduled job',
    responses: {
      200: json(z.array(jobRunSchema), [
        {
          job: 'heartbeat',
          period_start: '2026-11-23T13:00:00.000Z',
          ran_at: '2026-11-23T13:00:00.120Z',
          status: 200,
          output: null,
        },
      ]),
    },
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/v1/dead-letters',
    summary: 'List dead letters, newest first',
    query: deadLettersQuery,
    responses: { 200: json(z.array(deadLetterSchema), [letter]) },
    errors: [400],
  },
  {
    ...admin,
    method: 'get',
    path: '/admin/v1/dead-letters/:id',
    summary: 'Read a dead letter, its value whole',
    params: { id: { schema: z.string(), description: 'the dead letter id', example: letter.id } },
    responses: { 200: json(deadLetterSchema, letter) },
    errors: [404],
  },
  {
    ...admin,
    method: 'post',
    path: '/admin/v1/dead-letters/:id/replay',
    summary: 'Replay a dead letter onto its topic and partition',
    params: { id: { schema: z.string(), description: 'the dead letter id', example: letter.id } },
    responses: {
      202: json(replayed, {
        id: letter.id,
        topic: 'sluice.uploads',
        partition: 0,
        key: null,
        headers: { tx: 'Yx2…' },
        value_bytes: 12,
        replayed_at: '2026-11-23T14:00:00.000Z',
      }),
    },
    errors: [404],
  },
  {
    ...admin,
    tag: 'exports',
    method: 'post',
    path: '/admin/v1/orgs/:org_id/exports',
    summary: "Enable a source's exports",
    description: "Every job type of the source by default; refused past the org plan's cap (409).",
    params: { org_id: orgId },
    body: {
      schema: enableExportBody,
      example: { source_type: 'audiences', source_id: 12, job_types: ['email'] },
    },
    responses: { 201: json(z.array(exportJobSchema), [exportJob]) },
    errors: [400, 404, 409, 503],
  },
  {
    ...admin,
    tag: 'exports',
    method: 'get',
    path: '/admin/v1/orgs/:org_id/exports',
    summary: "List an org's exports with their state and latest file",
    params: { org_id: orgId },
    responses: { 200: json(z.array(exportJobSchema), [exportJob]) },
    errors: [400, 404],
  },
  {
    ...admin,
    tag: 'exports',
    method: 'get',
    path: '/admin/v1/orgs/:org_id/exports/:export_id',
    summary: 'Read an export',
    params: { org_id: orgId, export_id: exportId },
    responses: { 200: json(exportJobSchema, exportJob) },
    errors: [400, 404],
  },
  {
    ...admin,
    tag: 'exports',
    method: 'delete',
    path: '/admin/v1/orgs/:org_id/exports/:export_id',
    summary: 'Disable an export',
    params: { org_id: orgId, export_id: exportId },
    responses: { 204: noContent },
    errors: [400, 404, 503],
  },
  {
    ...admin,
    tag: 'exports',
    method: 'post',
    path: '/admin/v1/orgs/:org_id/exports/:export_id/refresh',
    summary: "Write an export's file now",
    description: 'A log export needs the hour (UTC) to write.',
    params: { org_id: orgId, export_id: exportId },
    body: { schema: refreshExportBody, example: { hour: '2026-11-23T13' } },
    responses: {
      202: json(z.object({ id: z.number().int(), enqueued: z.literal(true) }), { id: 3, enqueued: true }),
    },
    errors: [400, 404, 409],
  },
  {
    ...admin,
    tag: 'exports',
    method: 'put',
    path: '/admin/v1/orgs/:org_id/export-plan',
    summary: "Set the org's export plan",
    params: { org_id: orgId },
    body: { schema: exportPlanBody, example: { plan: 'remarketing' } },
    responses: { 200: json(z.looseObject({ plan: z.string() }), { org_id: 1, plan: 'remarketing' }) },
    errors: [400, 404, 503],
  },
  {
    ...admin,
    tag: 'push',
    method: 'get',
    path: '/admin/v1/apps/:app_id/push/transports',
    summary: "An app's push transports (secrets masked)",
    params: { app_id: { schema: z.string(), description: 'the app id', example: 'acme-ios' } },
    responses: { 200: json(transports, fileTransports) },
    errors: [404],
  },
  {
    ...admin,
    tag: 'push',
    method: 'put',
    path: '/admin/v1/apps/:app_id/push/transports/:platform',
    summary: "Set an app's push transport for a platform",
    params: { app_id: { schema: z.string(), description: 'the app id', example: 'acme-ios' }, platform },
    body: {
      schema: z.object({
        kind: z.enum(['file', 'webhook', 'apns', 'fcm']),
        settings: z.record(z.string(), z.unknown()).optional(),
      }),
      example: { kind: 'webhook', settings: { url: 'https://hooks.example.com/push' } },
    },
    responses: { 200: json(transports, fileTransports) },
    errors: [400, 404, 503],
  },
  {
    ...admin,
    tag: 'push',
    method: 'delete',
    path: '/admin/v1/apps/:app_id/push/transports/:platform',
    summary: "Remove an app's push transport for a platform",
    params: { app_id: { schema: z.string(), description: 'the app id', example: 'acme-ios' }, platform },
    responses: { 204: noContent },
    errors: [400, 404, 503],
  },
]
