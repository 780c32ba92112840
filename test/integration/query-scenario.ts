import { DateTime } from 'luxon'
import { expect } from 'vitest'
import {
  SCHEMA_URL,
  lines,
  postSdk,
  postUpload,
  receiptDone,
  sdkReceiptDone,
  sessionRow,
  uuid,
} from '../helpers/ingestion-scenario.ts'
import { ADMIN_TOKEN } from '../helpers/edge.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { documentedFetch } from '../helpers/openapi-check.ts'

const RESULT_SET = 'application/vnd.localytics.v1+hal+json;type=ResultSet'

interface Answer {
  results: Record<string, unknown>[]
  query: Record<string, unknown>
  app_ids: string[]
  comment: string | null
  created_at: string
  truncated: boolean
  _links: Record<string, { href: string }>
}

/**
 * The Query API against events posted through the upload APIs, run the same way in both modes:
 * every number is checked against a count made here over the posted events.
 */
export async function runQueryScenario(sluice: InProcessSluice, suffix: string) {
  const appId = `q-${suffix}`
  const tenant = await sluice.tenant(`query-${suffix}`, [appId])
  const other = await sluice.tenant(`query-other-${suffix}`, [`qx-${suffix}`])
  const [apiKey, apiSecret] = Buffer.from(tenant.auth.slice('Basic '.length), 'base64')
    .toString()
    .split(':') as [string, string]
  const now = Date.now()
  const hour = 3_600_000

  // Devices first: server-side events are attributed to a customer's device.
  const sdkTx = await postSdk(sluice, appId, [
    sessionRow({
      install: 'i-alice',
      customer: 'alice',
      at: now - 3 * hour,
      country: 'fr',
      model: 'iPhone15,2',
    }),
    sessionRow({ install: 'i-bob', customer: 'bob', at: now - 2 * hour, country: 'de', model: 'iPad8,1' }),
    { type: 'e', uuid: uuid(), install_uuid: 'i-bob', at_millis: now - 2 * hour + 1000, name: 'Opened' },
  ])
  await sdkReceiptDone(sluice, appId, sdkTx)

  const posted = [
    {
      customer_id: 'alice',
      event_name: 'Purchase',
      t: now - 30 * hour,
      attributes: { sku: 'A-1', 'Amount (USD)': 5 },
      ltv_change: 299,
    },
    {
      customer_id: 'alice',
      event_name: 'Purchase',
      t: now - 90_000,
      attributes: { sku: 'B-2', 'Amount (USD)': 7 },
      ltv_change: 100,
    },
    {
      customer_id: 'bob',
      event_name: 'Purchase',
      t: now - 60_000,
      attributes: { sku: 'A-1', 'Amount (USD)': 3 },
      ltv_change: 0,
    },
    { customer_id: 'bob', event_name: 'Refund', t: now - 50_000, attributes: {}, ltv_change: -150 },
  ]
  const body = lines(
    posted.map((e) => ({
      schema_url: SCHEMA_URL,
      app_uuid: appId,
      uuid: uuid(),
      customer_id: e.customer_id,
      event_name: e.event_name,
      event_time: e.t,
      attributes: e.attributes,
      ltv_change: e.ltv_change,
    })),
  )
  const res = await postUpload(sluice, tenant.auth, body)
  expect(res.status).toBe(202)
  const tx = ((await res.json()) as { transaction_id: string }).transaction_id
  expect(await receiptDone(sluice, tenant.auth, tx)).toMatchObject({ accepted: posted.length, rejected: 0 })

  const ask = async (params: string, init: RequestInit = {}, path = '/v1/query') => {
    const r = await documentedFetch(`${sluice.url}${path}?${params}`, {
      ...init,
      headers: { Authorization: tenant.auth, ...(init.headers as Record<string, string>) },
    })
    return r
  }
  const answer = async (params: string, init: RequestInit = {}, path = '/v1/query'): Promise<Answer> => {
    const r = await ask(params, init, path)
    const text = await r.text()
    expect(r.status, text).toBe(200)
    expect(r.headers.get('content-type')).toBe(RESULT_SET)
    return JSON.parse(text) as Answer
  }
  const q = (o: Record<string, string>) => new URLSearchParams({ app_id: appId, ...o }).toString()
  const day = (t: number) => new Date(t).toISOString().slice(0, 10)

  // Occurrences by event name: the SDK event and the server-side ones alike.
  const byName = await answer(q({ metrics: 'occurrences', dimensions: 'event_name' }), {
    headers: { Accept: 'application/json' },
  })
  expect(byName.results).toEqual([
    { event_name: 'Opened', occurrences: 1 },
    { event_name: 'Purchase', occurrences: 3 },
    { event_name: 'Refund', occurrences: 1 },
  ])
  expect(byName.app_ids).toEqual([appId])
  expect(byName.truncated).toBe(false)
  expect(byName._links.self).toEqual({ href: '/v1/query' })
  expect(byName.query).toMatchObject({
    metrics: ['occurrences'],
    dimensions: ['event_name'],
    time_zone: 'UTC',
  })
  expect(Date.parse(byName.created_at)).toBeGreaterThan(now - 60_000)

  // Users by day of the purchases (names with spaces and parentheses; a space after the comma).
  const purchases = posted.filter((e) => e.event_name === 'Purchase')
  const days = [...new Set(purchases.map((e) => day(e.t)))].sort()
  const byDay = await answer(
    q({
      metrics: 'users, avg(a:Amount (USD)),ltv',
      dimensions: 'day',
      conditions: JSON.stringify({ event_name: 'Purchase' }),
      days: '30',
    }),
    { headers: { Accept: '*/*' } },
  )
  expect(byDay.results).toEqual(
    days.map((d) => {
      const of = purchases.filter((e) => day(e.t) === d)
      return {
        day: d,
        users: new Set(of.map((e) => e.customer_id)).size,
        'avg(a:Amount (USD))': of.reduce((s, e) => s + Number(e.attributes['Amount (USD)']), 0) / of.length,
        ltv: of.reduce((s, e) => s + e.ltv_change, 0),
      }
    }),
  )

  // An attribute dimension (values as strings) with not_in holding null: absent values are left out.
  const bySku = await answer(
    q({
      metrics: 'occurrences',
      dimensions: 'a:sku',
      conditions: JSON.stringify({ 'a:sku': ['not_in', null, 'B-2'] }),
    }),
  )
  expect(bySku.results).toEqual([{ 'a:sku': 'A-1', occurrences: 2 }])
  // Attributes are not kept by the rollup: answered from the raw events, exactly.
  expect(bySku.query).toMatchObject({ source: 'raw', estimated: [] })
  const withNull = await answer(
    q({
      metrics: 'occurrences',
      dimensions: 'a:sku',
      conditions: JSON.stringify({ 'a:sku': ['in', null, 'B-2'] }),
    }),
  )
  expect(withNull.results).toEqual([
    { 'a:sku': 'B-2', occurrences: 1 },
    { 'a:sku': null, occurrences: 2 },
  ])

  // in_groups: the groups become the dimension's values.
  const grouped = await answer(
    q({
      metrics: 'occurrences,users',
      dimensions: 'event_name',
      conditions: JSON.stringify({
        event_name: ['in_groups', { Money: ['Purchase', 'Refund'], App: ['Opened'] }],
      }),
    }),
  )
  expect(grouped.results).toEqual([
    { event_name: 'App', occurrences: 1, users: 1 },
    { event_name: 'Money', occurrences: 4, users: 2 },
  ])

  // A metric condition filters after aggregation; order by a metric, descending.
  const busy = await answer(
    q({
      metrics: 'occurrences',
      dimensions: 'event_name',
      conditions: JSON.stringify({ occurrences: ['>', 1] }),
    }),
  )
  expect(busy.results).toEqual([{ event_name: 'Purchase', occurrences: 3 }])

  // Rails brackets, an order, and the app in the path.
  const rails = await answer(
    'metrics[]=occurrences&dimensions[]=event_name&conditions[event_name][]=in&conditions[event_name][]=Refund&conditions[event_name][]=Opened&order[]=-event_name',
    {},
    `/v1/apps/${appId}/query`,
  )
  expect(rails.results).toEqual([
    { event_name: 'Refund', occurrences: 1 },
    { event_name: 'Opened', occurrences: 1 },
  ])
  expect(rails._links.self).toEqual({ href: `/v1/apps/${appId}/query` })

  // Sessions and their users by country, from the SDK's sessions (no event dimension).
  const sessions = await answer(q({ metrics: 'sessions,users', dimensions: 'country' }))
  expect(sessions.results).toEqual([
    { country: 'de', sessions: 1, users: 1 },
    { country: 'fr', sessions: 1, users: 1 },
  ])

  // Sessions and their length, from the session rollup (exact): each session's length is its last
  // raw log row minus its start.
  const lengths = await answer(q({ metrics: 'sessions,average_session_length', days: '2' }))
  expect(lengths.query).toMatchObject({ source: 'query_session_hours', estimated: [] })
  expect(lengths.results).toEqual([{ sessions: 2, average_session_length: expect.any(Number) }])
  expect(lengths.results[0]!.average_session_length).toBeGreaterThanOrEqual(0)
  expect(lengths.results[0]!.average_session_length).toBeLessThanOrEqual(1)

  // POST with a JSON body carrying the credentials (no Basic), and a comment.
  const posted2 = await documentedFetch(`${sluice.url}/v1/query`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({
      app_id: appId,
      metrics: ['occurrences'],
      dimensions: [],
      comment: 'monthly',
      api_key: apiKey,
      api_secret: apiSecret,
      limit: 1,
    }),
  })
  expect(posted2.status).toBe(200)
  const total = (await posted2.json()) as Answer
  expect(total.results).toEqual([{ occurrences: 5 }])
  expect(total.comment).toBe('monthly')
  expect(total.truncated).toBe(false)

  // limit below the rows: truncated.
  const cut = await answer(q({ metrics: 'occurrences', dimensions: 'event_name', limit: '2' }))
  expect(cut.results).toHaveLength(2)
  expect(cut.truncated).toBe(true)

  // CSV when asked.
  const csv = await ask(q({ metrics: 'occurrences', dimensions: 'event_name' }), {
    headers: { Accept: 'text/csv' },
  })
  expect(csv.headers.get('content-type')).toMatch(/^text\/csv/)
  expect(await csv.text()).toBe('event_name,occurrences\r\nOpened,1\r\nPurchase,3\r\nRefund,1\r\n')

  // Another org's app and an unknown app: the same 403, nothing saying which exists.
  const foreign = await ask(q({ app_id: `qx-${suffix}`, metrics: 'users' }))
  const unknown = await ask(q({ app_id: `nope-${suffix}`, metrics: 'users' }))
  expect(foreign.status).toBe(403)
  expect(unknown.status).toBe(403)
  const [fb, ub] = [(await foreign.json()) as { error: string }, (await unknown.json()) as { error: string }]
  expect(fb.error.replace(`qx-${suffix}`, 'X')).toBe(ub.error.replace(`nope-${suffix}`, 'X'))
  // The other org sees none of this app's events either.
  const theirs = await documentedFetch(`${sluice.url}/v1/query?${q({ metrics: 'occurrences' })}`, {
    headers: { Authorization: other.auth },
  })
  expect(theirs.status).toBe(403)

  // Bad input: 400 naming the part, in the shared error shape.
  for (const [params, part] of [
    [q({ metrics: 'bogus' }), "unknown metric 'bogus'"],
    [q({ metrics: 'users', dimensions: 'nope' }), "unknown dimension 'nope'"],
    [q({ metrics: 'users', conditions: '{"day": ["between", "2025-01-01"]}' }), 'between takes two operands'],
    [q({ metrics: 'users', conditions: '{bad json' }), 'conditions is not valid JSON'],
    [q({ metrics: 'users', limit: '50001' }), 'limit must be an integer from 1 to 50000'],
    [q({ metrics: 'users', conditions: '{"occurrences": [">", 1]}' }), 'needs that metric in metrics'],
  ] as const) {
    const r = await ask(params)
    const b = (await r.json()) as { error: string; errors: string[] }
    expect(r.status, params).toBe(400)
    expect(b.error).toContain(part)
    expect(b.errors).toEqual([b.error])
  }
  const noAuth = await documentedFetch(`${sluice.url}/v1/query?${q({ metrics: 'users' })}`)
  expect(noAuth.status).toBe(401)

  // The app's time zone, set through the admin API, moves the day boundaries.
  const zone = 'Pacific/Kiritimati' // UTC+14: most days differ from UTC's
  const set = await documentedFetch(`${sluice.url}/admin/v1/apps/${appId}/settings`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      time_zone: zone,
      icon_url: 'https://cdn.example/icon.png',
      custom_dimensions: { custom_0_dimension: 'Blood Type' },
    }),
  })
  expect(set.status).toBe(200)
  expect(await set.json()).toEqual({
    app_id: appId,
    time_zone: zone,
    icon_url: 'https://cdn.example/icon.png',
    custom_dimensions: { custom_0_dimension: 'Blood Type' },
  })
  const badZone = await documentedFetch(`${sluice.url}/admin/v1/apps/${appId}/settings`, {
    method: 'PUT',
    headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify({ time_zone: 'Mars/Olympus' }),
  })
  expect(badZone.status).toBe(400)
  expect(((await badZone.json()) as { error: string }).error).toContain('Mars/Olympus')

  const zoned = (t: number) => DateTime.fromMillis(t, { zone }).toISODate()!
  const zonedDays = [...new Set(posted.map((e) => zoned(e.t)))].sort()
  const inZone = await answer(
    q({ metrics: 'occurrences', dimensions: 'day', conditions: '{"event_name":["!=","Opened"]}' }),
  )
  expect(inZone.results).toEqual(
    zonedDays.map((d) => ({ day: d, occurrences: posted.filter((e) => zoned(e.t) === d).length })),
  )
  expect(inZone.query).toMatchObject({ time_zone: zone })

  // Apps API: the org's apps with stats from the stored data, never another org's.
  const listed = await documentedFetch(`${sluice.url}/v1/apps`, { headers: { Authorization: tenant.auth } })
  expect(listed.headers.get('content-type')).toBe('application/vnd.localytics.v1+hal+json;type=App')
  const list = (await listed.json()) as { _embedded: { apps: Record<string, unknown>[] }; _links: unknown }
  const sessionDays = [now - 3 * hour, now - 2 * hour]
  const allTimes = [...posted.map((e) => e.t), ...sessionDays, now - 2 * hour + 1000]
  const stats = {
    sessions: 2,
    closes: 0,
    users: 2,
    events: posted.length + 1,
    data_points: 2 + posted.length + 1,
    platforms: ['iOS'],
    client_libraries: [],
    begin_date: zoned(Math.min(...allTimes)),
    end_date: zoned(Math.max(...allTimes)),
  }
  expect(list._embedded.apps).toEqual([
    {
      name: appId,
      app_id: appId,
      created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/) as unknown,
      stats,
      _links: {
        self: { href: `/v1/apps/${appId}` },
        apps: { href: '/v1/apps' },
        query: {
          templated: true,
          href: `/v1/apps/${appId}/query{?app_id,metrics,dimensions,conditions,limit,order,days,comment,translate}`,
        },
        attributes: { href: `/v1/apps/${appId}/attributes` },
        root: { href: '/v1' },
      },
    },
  ])
  const one = await documentedFetch(`${sluice.url}/v1/apps/${appId}`, {
    headers: { Authorization: tenant.auth },
  })
  expect(one.headers.get('content-type')).toBe('application/vnd.localytics.v1+hal+json;type=App')
  expect(await one.json()).toMatchObject({
    app_id: appId,
    stats,
    icon_url: 'https://cdn.example/icon.png',
    custom_dimensions: { custom_0_dimension: 'Blood Type' },
  })
  const attrs = await documentedFetch(`${sluice.url}/v1/apps/${appId}/attributes`, {
    headers: { Authorization: tenant.auth },
  })
  expect(await attrs.json()).toEqual({
    events: [
      { event_name: 'Opened', attributes: [], high_cardinality_attributes: [] },
      { event_name: 'Purchase', attributes: ['Amount (USD)', 'sku'], high_cardinality_attributes: [] },
      { event_name: 'Refund', attributes: [], high_cardinality_attributes: [] },
    ],
    _links: { app: { href: `/v1/apps/${appId}` }, root: { href: '/v1' } },
  })
  const root = await fetch(`${sluice.url}/v1`, { headers: { Authorization: tenant.auth } })
  expect(await root.json()).toEqual({
    _links: {
      self: { href: '/v1' },
      apps: { href: '/v1/apps' },
      query: {
        templated: true,
        href: '/v1/query{?app_id,metrics,dimensions,conditions,limit,order,days,comment,translate}',
      },
    },
  })
  for (const path of [`/v1/apps/qx-${suffix}`, `/v1/apps/qx-${suffix}/attributes`]) {
    const r = await documentedFetch(`${sluice.url}${path}`, { headers: { Authorization: tenant.auth } })
    expect(r.status, path).toBe(403)
  }
}
