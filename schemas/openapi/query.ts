import { z } from 'zod'
import { appSettingsFields } from '../../pipelines/control/app-settings.ts'
import { json, type Operation, type Param } from './operation.ts'

/** The Query and Apps APIs (docs/query-api.md) and the admin route of an app's settings. */

const RESULT_SET = 'application/vnd.localytics.v1+hal+json;type=ResultSet'
const APP = 'application/vnd.localytics.v1+hal+json;type=App'
const ATTRIBUTES = 'application/vnd.localytics.v1+hal+json;type=Attributes'

const appId: Param = { schema: z.string(), description: "an app of the key's org", example: 'acme-ios' }
const links = z.record(z.string(), z.unknown())

/** The query's parameters, in the query string (GET) or a JSON body (POST), as the spec lists them. */
const queryParameters = z
  .object({
    app_id: z.string().optional().describe('app ids, comma-separated (or a JSON array in a body)'),
    metrics: z.unknown().optional().describe('e.g. users, sessions, occurrences'),
    dimensions: z.unknown().optional().describe('e.g. day, event_name, country, app_version'),
    conditions: z
      .unknown()
      .optional()
      .describe('a JSON object: {"day": ["between", "2026-11-01", "2026-11-23"]}'),
    limit: z.unknown().optional(),
    order: z.unknown().optional(),
    days: z.unknown().optional(),
    comment: z.string().optional(),
    translate: z.unknown().optional(),
  })
  .meta({ id: 'QueryParameters' })
const queryExample = {
  app_id: 'acme-ios',
  metrics: 'occurrences',
  dimensions: 'day,event_name',
  conditions: { day: ['between', '2026-11-01', '2026-11-23'] },
}
const resultSet = z
  .object({
    results: z.array(z.record(z.string(), z.unknown())),
    query: z.record(z.string(), z.unknown()),
    app_ids: z.array(z.string()),
    comment: z.string().nullable(),
    created_at: z.string(),
    truncated: z.boolean(),
    _links: links,
  })
  .meta({ id: 'ResultSet' })
const resultExample = {
  results: [{ day: '2026-11-23', event_name: 'Purchase', occurrences: 42 }],
  query: { metrics: ['occurrences'], dimensions: ['day', 'event_name'] },
  app_ids: ['acme-ios'],
  comment: null,
  created_at: '2026-11-23T13:00:00.000Z',
  truncated: false,
  _links: { self: { href: '/v1/query' }, root: { href: '/v1' } },
}
const appEntry = z
  .looseObject({
    name: z.string(),
    app_id: z.string(),
    created_at: z.string(),
    stats: z.unknown(),
    _links: links,
  })
  .meta({ id: 'AnalyticsApp' })
const appExample = {
  name: 'Acme iOS',
  app_id: 'acme-ios',
  created_at: '2026-11-23T13:00:00.000Z',
  stats: { sessions: 10, users: 4 },
  _links: { self: { href: '/v1/apps/acme-ios' } },
}
const appList = z.object({ _embedded: z.object({ apps: z.array(appEntry) }), _links: links })
const settings = z
  .object({
    app_id: z.string(),
    time_zone: z.string(),
    icon_url: z.string(),
    custom_dimensions: z.record(z.string(), z.string()),
  })
  .meta({ id: 'AppSettings' })
const settingsExample = {
  app_id: 'acme-ios',
  time_zone: 'Europe/Paris',
  icon_url: '',
  custom_dimensions: { custom_0_dimension: 'Plan' },
}

const analyst = { tag: 'query', auth: 'basic', scope: 'query', rateLimited: true } as const
const queryOps = (path: string, params?: Record<string, Param>): Operation[] => [
  {
    ...analyst,
    ...(params && { params }),
    method: 'get',
    path,
    summary: 'Run an analytics query (parameters in the query string)',
    description: 'Accept: text/csv for CSV.',
    query: queryParameters,
    responses: { 200: json(resultSet, resultExample, 'the result set', RESULT_SET) },
    errors: [400, 403, 503],
  },
  {
    ...analyst,
    ...(params && { params }),
    method: 'post',
    path,
    summary: 'Run an analytics query (parameters in a JSON body)',
    body: { schema: queryParameters, example: queryExample },
    responses: { 200: json(resultSet, resultExample, 'the result set', RESULT_SET) },
    errors: [400, 403, 503],
  },
]
const listApps = (path: string): Operation => ({
  ...analyst,
  method: 'get',
  path,
  summary: "The org's apps with their stats",
  responses: {
    200: json(
      appList,
      { _embedded: { apps: [appExample] }, _links: { self: { href: '/v1/apps' } } },
      'OK',
      APP,
    ),
  },
})

export const queryOperations: Operation[] = [
  ...queryOps('/v1/query'),
  ...queryOps('/v1/apps/:app_id/query', { app_id: appId }),
  listApps('/v1/apps'),
  listApps('/v1/apps/'),
  {
    ...analyst,
    method: 'get',
    path: '/v1/apps/:app_id',
    summary: 'An app, its stats, icon, time zone and custom dimension labels',
    params: { app_id: appId },
    responses: {
      200: json(
        appEntry.extend({
          icon_url: z.string().nullable(),
          custom_dimensions: z.record(z.string(), z.string()),
          time_zone: z.string(),
        }),
        { ...appExample, icon_url: null, custom_dimensions: {}, time_zone: 'UTC' },
        'OK',
        APP,
      ),
    },
    errors: [403],
  },
  {
    ...analyst,
    method: 'get',
    path: '/v1/apps/:app_id/attributes',
    summary: 'The attribute names of each event of an app',
    params: { app_id: appId },
    responses: {
      200: json(
        z.object({ events: z.array(z.unknown()), _links: links }),
        { events: [{ event_name: 'Purchase', attributes: ['sku'] }], _links: {} },
        'OK',
        ATTRIBUTES,
      ),
    },
    errors: [403],
  },
  {
    tag: 'admin',
    auth: 'admin',
    method: 'get',
    path: '/admin/v1/apps/:app_id/settings',
    summary: "An app's settings (time zone, icon, custom dimension labels)",
    params: { app_id: appId },
    responses: { 200: json(settings, settingsExample) },
    errors: [404],
  },
  {
    tag: 'admin',
    auth: 'admin',
    method: 'put',
    path: '/admin/v1/apps/:app_id/settings',
    summary: "Change an app's settings (the fields named; a null label removes it)",
    params: { app_id: appId },
    body: {
      schema: appSettingsFields,
      example: { time_zone: 'Europe/Paris', custom_dimensions: { custom_0_dimension: 'Plan' } },
    },
    responses: { 200: json(settings, settingsExample) },
    errors: [400, 404, 503],
  },
]
