import { z } from 'zod'
import { appSettingsFields } from '../app-settings.ts'
import type { Operation, Param } from './operation.ts'

/** The Query and Apps APIs (docs/query-api.md) and the admin route of an app's settings. */

const HAL = 'application/vnd.localytics.v1+hal+json'
const appParam: Param = {
  schema: z.string(),
  description: "the app id (an app of the key's org)",
  example: 'acme-ios',
}
const analyst = { tag: 'query', auth: 'basic', scope: 'query', rateLimited: true } as const

const queryParams = z
  .object({
    app_id: z.string().optional().describe('the app (or a list, like app_ids)'),
    app_ids: z.string().optional(),
    metrics: z.string().describe('comma list, Rails array or JSON array of metric names'),
    dimensions: z.string().optional(),
    conditions: z.string().optional().describe('JSON object from names to conditions (or Rails brackets)'),
    order: z.string().optional(),
    limit: z.string().optional().describe('1 … 50000'),
    days: z.string().optional(),
    comment: z.string().optional(),
    translate: z.string().optional(),
    profiledb_id: z.string().optional(),
    api_key: z.string().optional().describe('credentials instead of HTTP Basic (they win over it)'),
    api_secret: z.string().optional(),
  })
  .loose()

const nameList = z.union([z.string(), z.array(z.string())])
/** A JSON body: the same parameters, lists as arrays or comma lists, conditions as an object. */
const queryBody = queryParams.extend({
  app_ids: nameList.optional(),
  metrics: nameList,
  dimensions: nameList.optional(),
  order: nameList.optional(),
  conditions: z.union([z.string(), z.record(z.string(), z.unknown())]).optional(),
  limit: z.union([z.string(), z.number()]).optional(),
  days: z.union([z.string(), z.number()]).optional(),
})

const resultSet = z
  .looseObject({
    results: z.array(z.record(z.string(), z.union([z.string(), z.number(), z.null()]))),
    query: z.looseObject({}),
    app_ids: z.array(z.string()),
    comment: z.string().nullable(),
    created_at: z.string(),
    truncated: z.boolean(),
    _links: z.looseObject({}),
  })
  .meta({ id: 'ResultSet' })

const stats = z.object({
  sessions: z.number(),
  closes: z.number(),
  users: z.number(),
  events: z.number(),
  data_points: z.number(),
  platforms: z.array(z.string()),
  client_libraries: z.array(z.string()),
  begin_date: z.string().nullable(),
  end_date: z.string().nullable(),
})
const appEntry = z
  .looseObject({
    name: z.string(),
    app_id: z.string(),
    created_at: z.string(),
    stats,
    _links: z.looseObject({}),
  })
  .meta({ id: 'AnalystApp' })
const settings = z
  .object({
    app_id: z.string(),
    time_zone: z.string(),
    icon_url: z.string(),
    custom_dimensions: z.record(z.string(), z.string()),
  })
  .meta({ id: 'AppSettings' })

const statsExample = {
  sessions: 2,
  closes: 1,
  users: 2,
  events: 5,
  data_points: 8,
  platforms: ['iOS'],
  client_libraries: ['ios_6.2'],
  begin_date: '2026-11-22',
  end_date: '2026-11-23',
}
const appExample = {
  name: 'Acme iOS',
  app_id: 'acme-ios',
  created_at: '2026-11-01T09:00:00.000Z',
  stats: statsExample,
  _links: { self: { href: '/v1/apps/acme-ios' }, root: { href: '/v1' } },
}
const settingsExample = {
  app_id: 'acme-ios',
  time_zone: 'Europe/Paris',
  icon_url: '',
  custom_dimensions: { custom_0_dimension: 'Blood Type' },
}

const queryExample = {
  results: [{ day: '2026-11-23', users: 12 }],
  query: {
    app_ids: ['acme-ios'],
    metrics: ['users'],
    dimensions: ['day'],
    time_zone: 'UTC',
    estimated: ['users'],
    source: 'query_rollup',
  },
  app_ids: ['acme-ios'],
  comment: null,
  created_at: '2026-11-23T12:00:00.000Z',
  truncated: false,
  _links: { self: { href: '/v1/query' }, root: { href: '/v1' } },
}

const queryOperations = (path: string, params?: Record<string, Param>): Operation[] =>
  (['get', 'post'] as const).map((method) => ({
    ...analyst,
    method,
    path,
    ...(params && { params }),
    summary:
      method === 'get' ? 'Run a query (parameters in the query string)' : 'Run a query (form or JSON body)',
    description:
      "Metrics by dimensions over the apps of the key's org; `Accept: text/csv` gives CSV (docs/query-api.md).",
    query: queryParams,
    ...(method === 'post' && {
      body: { schema: queryBody, example: { app_id: 'acme-ios', metrics: ['users'], dimensions: ['day'] } },
    }),
    responses: {
      200: {
        description: 'the result set',
        schema: resultSet,
        example: queryExample,
        contentType: `${HAL};type=ResultSet`,
      },
    },
    errors: [400, 403],
  }))

export const queryAreaOperations: Operation[] = [
  ...queryOperations('/v1/query'),
  ...queryOperations('/v1/apps/:app_id/query', { app_id: appParam }),
  {
    ...analyst,
    method: 'get',
    path: '/v1',
    summary: 'The HAL root of the Query and Apps APIs',
    responses: { 200: { description: 'links to apps and query', contentType: `${HAL};type=Root` } },
  },
  {
    ...analyst,
    method: 'get',
    path: '/v1/apps',
    summary: "The org's apps with their stats (also /v1/apps/)",
    responses: {
      200: {
        description: 'the apps',
        schema: z.looseObject({
          _embedded: z.object({ apps: z.array(appEntry) }),
          _links: z.looseObject({}),
        }),
        example: {
          _embedded: { apps: [appExample] },
          _links: { self: { href: '/v1/apps' }, root: { href: '/v1' } },
        },
        contentType: `${HAL};type=App`,
      },
    },
  },
  {
    ...analyst,
    method: 'get',
    path: '/v1/apps/:app_id',
    params: { app_id: appParam },
    summary: 'One app: stats, icon, custom dimension labels',
    responses: {
      200: { description: 'the app', schema: appEntry, example: appExample, contentType: `${HAL};type=App` },
    },
    errors: [403],
  },
  {
    ...analyst,
    method: 'get',
    path: '/v1/apps/:app_id/attributes',
    params: { app_id: appParam },
    summary: "Each event name with its attributes' names",
    responses: {
      200: { description: 'the event names and attributes', contentType: `${HAL};type=Attributes` },
    },
    errors: [403],
  },
  {
    tag: 'admin',
    auth: 'admin',
    method: 'get',
    path: '/admin/v1/apps/:app_id/settings',
    params: { app_id: appParam },
    summary: "An app's time zone, icon and custom dimension labels",
    responses: { 200: { description: 'the settings', schema: settings, example: settingsExample } },
    errors: [404],
  },
  {
    tag: 'admin',
    auth: 'admin',
    method: 'put',
    path: '/admin/v1/apps/:app_id/settings',
    params: { app_id: appParam },
    summary: "Set an app's time zone, icon or custom dimension labels (the fields given)",
    body: {
      schema: appSettingsFields,
      example: { time_zone: 'Europe/Paris', custom_dimensions: { custom_0_dimension: 'Blood Type' } },
    },
    responses: {
      200: { description: 'the settings as they now stand', schema: settings, example: settingsExample },
    },
    errors: [400, 404],
  },
]
