import { expect } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { postSdk, sdkReceiptDone, uuid } from '../helpers/ingestion-scenario.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { documentedFetch } from '../helpers/openapi-check.ts'

/**
 * The audience API contract, run the same way in both modes: CRUD, soft delete, the counts
 * against data uploaded through the SDK and profile APIs (every rule kind), the refresh, bad
 * input, and isolation between orgs and apps.
 */

interface Answer {
  status: number
  body: unknown
  headers: Headers
}

type Req = (method: string, path: string, body?: unknown, raw?: string) => Promise<Answer>

function client(sluice: InProcessSluice, auth: string): Req {
  return async (method, path, body, raw) => {
    const res = await documentedFetch(`${sluice.url}${path}`, {
      method,
      headers: { Authorization: auth, 'Content-Type': 'application/json' },
      body: raw ?? (body === undefined ? undefined : JSON.stringify(body)),
    })
    const text = await res.text()
    return {
      status: res.status,
      body: text === '' ? undefined : (JSON.parse(text) as unknown),
      headers: res.headers,
    }
  }
}

const DAY = 86_400_000
const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/

/** An install of the test data: what is uploaded for it, so the expected counts follow from it. */
interface Install {
  install: string
  customer?: string
  /** Days ago of each session start. */
  sessions: number[]
  /** Push token: none, enabled, or uploaded with a disabled status. */
  push: 'none' | 'enabled' | 'disabled'
  /** Events: name, days ago, attributes. */
  events: { name: string; daysAgo: number; attributes?: Record<string, string> }[]
}

function sdkRows(i: Install, now: number) {
  const rows: unknown[] = []
  for (const daysAgo of i.sessions)
    rows.push({
      type: 's',
      uuid: uuid(),
      install_uuid: i.install,
      device_uuid: `dev-${i.install}`,
      session_uuid: `sess-${uuid()}`,
      at_millis: now - daysAgo * DAY,
      ...(i.customer ? { customer_ids: { customer_id: i.customer } } : {}),
      app_ver: '2.1.0',
      os_ver: '17.1',
      platform: 'iOS',
      model: 'iPhone15,2',
      country: 'fr',
      language: 'fr',
      device_timezone: 'Europe/Paris',
      ...(i.push !== 'none' && {
        push_token: `tok-${i.install}`,
        push_status: i.push === 'enabled' ? 'Enabled (Prominent)' : 'Disabled',
      }),
    })
  for (const e of i.events)
    rows.push({
      type: 'e',
      uuid: uuid(),
      install_uuid: i.install,
      at_millis: now - e.daysAgo * DAY,
      name: e.name,
      attributes: e.attributes ?? {},
      ...(i.customer ? { customer_ids: { customer_id: i.customer } } : {}),
    })
  return rows
}

export async function runAudienceScenario(sluice: InProcessSluice, store: Store, suffix: string) {
  const appA = `aud-a-${suffix}`
  const appB = `aud-b-${suffix}`
  const appZ = `aud-z-${suffix}`
  const tenant = await sluice.tenant(`audiences-${suffix}`, [appA, appB])
  const other = await sluice.tenant(`audiences-other-${suffix}`, [appZ])
  const api = client(sluice, tenant.auth)
  const otherApi = client(sluice, other.auth)
  const s: Scenario = { sluice, store, suffix, appA, appB, appZ, tenant, other, api, otherApi }
  await upload(s)
  await previews(s)
  await countsOfEveryRuleKind(s)
  await crud(s)
  await refreshAndRecompute(s)
}

interface Scenario {
  sluice: InProcessSluice
  store: Store
  suffix: string
  appA: string
  appB: string
  appZ: string
  tenant: { orgId: number; auth: string }
  other: { orgId: number; auth: string }
  api: Req
  otherApi: Req
}

const audiencesOf = (s: Scenario, app: string) => `/api/v6/orgs/${s.tenant.orgId}/apps/${app}/audiences`

/** CRUD, bad input and isolation, on app B (whose list holds only what this part creates). */
async function crud(s: Scenario) {
  const { sluice, store, appB, appZ, tenant, other, api, otherApi } = s
  const crudBase = audiencesOf(s, appB)
  const appABase = audiencesOf(s, s.appA)
  // ---- Create: 201 with the Audience, counts waited for.
  const rules1 = {
    behavior_profile_operator: 'and',
    targeting_type: 'install_id',
    behavior: {
      days: 30,
      behavior_rule_operator: 'and',
      rules: [
        {
          rule_type: 'event',
          event_name: 'purchase',
          count: 1,
          count_operator: 'at_least',
          conditions: { operator: 'and', filters: [] },
        },
      ],
    },
  }
  const created = await api('POST', crudBase, { name: '  Buyers  ', target_rules: rules1 })
  expect(created.status).toBe(201)
  const a1 = created.body as {
    id: number
    name: string
    created_at: string
    target_rules: unknown
    segmentation_count: Record<string, unknown>
  }
  expect(Object.keys(a1).sort()).toEqual(['created_at', 'id', 'name', 'segmentation_count', 'target_rules'])
  expect(Number.isInteger(a1.id)).toBe(true)
  expect(a1.name).toBe('Buyers')
  expect(a1.created_at).toMatch(ISO)
  expect(a1.target_rules).toEqual(rules1)
  expect(Object.keys(a1.segmentation_count).sort()).toEqual(['has_push', 'seen_last_thirty', 'user_count'])

  // Stored as control state, with both forms of the rules.
  const [stored] = await store.query<{
    org_id: string | number
    app_id: string
    name: string
    target_rules_given: string
  }>('SELECT org_id, app_id, name, target_rules_given FROM audiences FINAL WHERE id = {id:UInt64}', {
    id: a1.id,
  })
  expect(stored).toMatchObject({ app_id: appB, name: 'Buyers' })
  expect(Number(stored!.org_id)).toBe(tenant.orgId)
  expect(JSON.parse(stored!.target_rules_given)).toEqual(rules1)

  // ---- Detail, segmentation, list.
  const detail = await api('GET', `${crudBase}/${a1.id}`)
  expect(detail.status).toBe(200)
  expect(detail.body).toMatchObject({ segmentation_id: String(a1.id), target_rules: rules1 })
  expect(Object.keys(detail.body as object).sort()).toEqual([
    'has_push',
    'seen_last_thirty',
    'segmentation_id',
    'target_rules',
    'updated_at',
    'user_count',
  ])
  const seg = await api('GET', `${crudBase}/${a1.id}/segmentation`)
  expect(seg.status).toBe(200)
  expect(Object.keys(seg.body as object).sort()).toEqual([
    'has_push',
    'last_calculated_on',
    'seen_last_thirty',
    'segmentation_id',
    'user_count',
  ])
  expect((seg.body as { segmentation_id: unknown }).segmentation_id).toBe(a1.id)

  const list = await api('GET', crudBase)
  expect(list.status).toBe(200)
  expect(list.body).toEqual([
    {
      id: a1.id,
      name: 'Buyers',
      created_at: a1.created_at,
      updated_at: a1.created_at,
      deleted_at: null,
      target_rules: rules1,
      segmentation_count: expect.objectContaining({
        updated_at: expect.stringMatching(ISO) as unknown,
      }) as unknown,
    },
  ])
  // App A has audiences of its own, not this one.
  expect(((await api('GET', appABase)).body as { id: number }[]).map((a) => a.id)).not.toContain(a1.id)

  // ---- Update: PUT replaces name and rules (both required), PATCH changes what it names.
  const rules2 = {
    behavior_profile_operator: 'and',
    targeting_type: 'install_id',
    behavior: {
      days: 30,
      behavior_rule_operator: 'and',
      rules: [{ rule_type: 'event', event_name: 'view', count: 1, count_operator: 'at_least' }],
    },
  }
  expect(await api('PUT', `${crudBase}/${a1.id}`, { name: 'Viewers' })).toMatchObject({
    status: 422,
    body: {
      error: 'target_rules: target_rules is required',
      errors: ['target_rules: target_rules is required'],
    },
  })
  const put = await api('PUT', `${crudBase}/${a1.id}`, { name: 'Viewers', target_rules: rules2 })
  expect(put.status).toBe(200)
  expect(put.body).toMatchObject({
    id: a1.id,
    name: 'Viewers',
    created_at: a1.created_at,
    target_rules: rules2,
  })
  const patched = await api('PATCH', `${crudBase}/${a1.id}`, { name: 'Viewers (renamed)' })
  expect(patched.status).toBe(200)
  expect(patched.body).toMatchObject({ id: a1.id, name: 'Viewers (renamed)', target_rules: rules2 })
  expect(await api('PATCH', `${crudBase}/${a1.id}`, {})).toMatchObject({
    status: 422,
    body: { errors: ['a PATCH changes name or target_rules: give at least one'] },
  })
  const afterUpdate = (await api('GET', crudBase)).body as {
    name: string
    created_at: string
    updated_at: string
  }[]
  expect(afterUpdate).toHaveLength(1)
  expect(afterUpdate[0]!.name).toBe('Viewers (renamed)')
  expect(afterUpdate[0]!.created_at).toBe(a1.created_at)
  expect(Date.parse(afterUpdate[0]!.updated_at)).toBeGreaterThanOrEqual(Date.parse(a1.created_at))

  // ---- Bad input: malformed 400, breaking a rule 422 with the JSON path, wrong media type 415.
  expect(await api('POST', crudBase, undefined, '{"name": ')).toMatchObject({
    status: 400,
    body: { error: 'request body is not valid JSON', errors: ['request body is not valid JSON'] },
  })
  expect(await api('POST', crudBase, [1, 2])).toMatchObject({
    status: 400,
    body: { errors: ['the body must be a JSON object'] },
  })
  const badRule = await api('POST', crudBase, {
    target_rules: {
      behavior: { rules: [{ rule_type: 'event', event_name: 'x', count_operator: 'sometimes' }] },
    },
  })
  expect(badRule.status).toBe(422)
  const badErrors = (badRule.body as { errors: string[] }).errors
  expect(badErrors).toContain('name: name is required')
  expect(badErrors.some((e) => e.startsWith('target_rules.behavior.rules[0].count_operator: '))).toBe(true)
  expect((badRule.body as { issues: { path: string }[] }).issues.map((i) => i.path)).toContain(
    'target_rules.behavior.rules[0].count_operator',
  )
  const textPlain = await documentedFetch(`${sluice.url}${crudBase}`, {
    method: 'POST',
    headers: { Authorization: tenant.auth, 'Content-Type': 'text/plain' },
    body: JSON.stringify({ name: 'x', target_rules: rules1 }),
  })
  expect(textPlain.status).toBe(415)
  // Nothing of the refused writes was stored.
  expect(((await api('GET', crudBase)).body as unknown[]).length).toBe(1)

  // ---- Auth: no credentials 401, a key without the campaigns scope 403.
  expect((await documentedFetch(`${sluice.url}${crudBase}`)).status).toBe(401)
  const eventsKey = await sluice.admin<{ api_key: string; api_secret: string }>(
    'POST',
    `/orgs/${tenant.orgId}/keys`,
    {
      scopes: ['events'],
    },
  )
  const eventsOnly = client(
    sluice,
    `Basic ${Buffer.from(`${eventsKey.api_key}:${eventsKey.api_secret}`).toString('base64')}`,
  )
  expect(await eventsOnly('GET', crudBase)).toMatchObject({
    status: 403,
    body: { error: "this API key lacks the 'campaigns' scope" },
  })

  // ---- Isolation: another org's key gets nothing.
  const otherBase = `/api/v6/orgs/${other.orgId}/apps/${appZ}/audiences`
  // Its own org and app, naming our audience's id: 404, no contents.
  for (const [method, path, body] of [
    ['GET', `${otherBase}/${a1.id}`, undefined],
    ['GET', `${otherBase}/${a1.id}/segmentation`, undefined],
    ['POST', `${otherBase}/${a1.id}/segmentation`, undefined],
    ['PUT', `${otherBase}/${a1.id}`, { name: 'stolen', target_rules: rules1 }],
    ['PATCH', `${otherBase}/${a1.id}`, { name: 'stolen' }],
    ['DELETE', `${otherBase}/${a1.id}`, undefined],
  ] as const) {
    const answer = await otherApi(method, path, body)
    expect(answer.status, `${method} ${path}`).toBe(404)
    expect(answer.body).toEqual({
      error: `audience ${a1.id} not found`,
      errors: [`audience ${a1.id} not found`],
    })
  }
  expect(await otherApi('GET', otherBase)).toMatchObject({ status: 200, body: [] })
  // Our org or our app in the path: 403.
  expect((await otherApi('GET', crudBase)).status).toBe(403)
  expect((await otherApi('GET', `${crudBase}/${a1.id}`)).status).toBe(403)
  expect((await otherApi('POST', crudBase, { name: 'x', target_rules: rules1 })).status).toBe(403)
  expect((await api('GET', `/api/v6/orgs/${tenant.orgId}/apps/${appZ}/audiences`)).status).toBe(403)
  expect((await api('GET', `/api/v6/orgs/${tenant.orgId}/apps/no-such-app/audiences`)).status).toBe(403)
  // Our own key, our audience under our other app: 404.
  expect(await api('GET', `${appABase}/${a1.id}`)).toMatchObject({ status: 404 })
  expect(await api('DELETE', `${appABase}/${a1.id}`)).toMatchObject({ status: 404 })
  expect(await api('GET', `${crudBase}/not-a-number`)).toMatchObject({ status: 404 })
  // The audience is as we left it.
  expect(await api('GET', `${crudBase}/${a1.id}`)).toMatchObject({
    status: 200,
    body: { target_rules: rules2 },
  })

  // ---- Soft delete: gone from the API, kept in the table; ids are never reused.
  const second = await api('POST', crudBase, { name: 'Second', target_rules: rules1 })
  expect(second.status).toBe(201)
  const a2 = second.body as { id: number }
  expect(a2.id).toBe(a1.id + 1)
  expect(await api('DELETE', `${crudBase}/${a2.id}`)).toMatchObject({ status: 204, body: undefined })
  for (const [method, path, body] of [
    ['GET', `${crudBase}/${a2.id}`, undefined],
    ['GET', `${crudBase}/${a2.id}/segmentation`, undefined],
    ['POST', `${crudBase}/${a2.id}/segmentation`, undefined],
    ['PATCH', `${crudBase}/${a2.id}`, { name: 'back' }],
    ['DELETE', `${crudBase}/${a2.id}`, undefined],
  ] as const)
    expect((await api(method, path, body)).status, `${method} ${path}`).toBe(404)
  expect(((await api('GET', crudBase)).body as { id: number }[]).map((a) => a.id)).toEqual([a1.id])
  const [deletedRow] = await store.query<{ deleted_at: string | null; name: string }>(
    'SELECT deleted_at, name FROM audiences FINAL WHERE id = {id:UInt64}',
    { id: a2.id },
  )
  expect(deletedRow?.name).toBe('Second')
  expect(deletedRow?.deleted_at).not.toBeNull()
  const third = await api('POST', crudBase, { name: 'Third', target_rules: rules1 })
  expect((third.body as { id: number }).id).toBe(a2.id + 1)
}

/**
 * The installs of app A, uploaded through the SDK endpoint. i5 sends only events (its device
 * exists, with no session: a member never seen); i6's push status is disabled.
 */
function installsOfA(suffix: string): Install[] {
  return [
    {
      install: `i1-${suffix}`,
      customer: `ann-${suffix}`,
      sessions: [1, 3],
      push: 'enabled',
      events: [
        { name: 'purchase', daysAgo: 1, attributes: { category: 'shoes', price: '120' } },
        { name: 'purchase', daysAgo: 2, attributes: { category: 'hats', price: '20' } },
      ],
    },
    {
      install: `i2-${suffix}`,
      customer: `bob-${suffix}`,
      sessions: [2],
      push: 'none',
      events: [{ name: 'purchase', daysAgo: 2, attributes: { category: 'shoes', price: '50' } }],
    },
    {
      install: `i3-${suffix}`,
      customer: `cat-${suffix}`,
      sessions: [10],
      push: 'enabled',
      events: [{ name: 'view', daysAgo: 10 }],
    },
    { install: `i4-${suffix}`, sessions: [20], push: 'enabled', events: [] },
    {
      install: `i5-${suffix}`,
      customer: `dan-${suffix}`,
      sessions: [],
      push: 'none',
      events: [{ name: 'view', daysAgo: 5 }],
    },
    {
      install: `i6-${suffix}`,
      customer: `eve-${suffix}`,
      sessions: [25],
      push: 'disabled',
      events: [{ name: 'purchase', daysAgo: 20, attributes: { category: 'shoes', price: '30' } }],
    },
  ]
}

async function uploadInstalls(s: Scenario, app: string, installs: Install[]) {
  const now = Date.now()
  for (const i of installs) {
    const tx = await postSdk(s.sluice, app, sdkRows(i, now))
    const receipt = await sdkReceiptDone(s.sluice, app, tx)
    expect(receipt.rejected).toBe(0)
  }
  // SDK events reach `events` through the events writer, after the receipt: wait until they are there.
  const events = installs.reduce((n, i) => n + i.events.length, 0)
  await waitFor(
    () =>
      s.store.query<{ n: string | number }>(
        'SELECT count() AS n FROM events WHERE app_id = {app:String} AND install_uuid IN {ids:Array(String)}',
        { app, ids: installs.map((i) => i.install) },
      ),
    (rows) => Number(rows[0]?.n) === events,
    { what: `${events} SDK events of ${app} stored`, timeoutMs: 60_000 },
  )
}

async function writeProfile(s: Scenario, path: string, attributes: Record<string, unknown>) {
  expect((await s.api('PATCH', path, { attributes })).status).toBe(202)
  await waitFor(
    () => s.api('GET', path),
    (r) => r.status === 200,
    { what: `profile ${path}`, timeoutMs: 30_000 },
  )
}

/** The data: SDK uploads in app A (and one purchase in app B and in the other org, never counted in A), profiles. */
async function upload(s: Scenario) {
  await uploadInstalls(s, s.appA, installsOfA(s.suffix))
  const elsewhere = (install: string): Install => ({
    install,
    customer: `ann-${s.suffix}`,
    sessions: [1],
    push: 'enabled',
    events: [{ name: 'purchase', daysAgo: 1, attributes: { category: 'shoes' } }],
  })
  await uploadInstalls(s, s.appB, [elsewhere(`b1-${s.suffix}`)])
  await uploadInstalls(s, s.appZ, [elsewhere(`z1-${s.suffix}`)])
  const x = s.suffix
  const app = (customer: string) => `/v1/apps/${s.appA}/profiles/${customer}-${x}`
  await writeProfile(s, app('ann'), { tier: 'gold', age: 41 })
  await writeProfile(s, app('bob'), { tier: 'silver', age: 25 })
  await writeProfile(s, app('cat'), { tier: 'gold' })
  await writeProfile(s, app('dan'), { age: 20 })
  await writeProfile(s, `/v1/profiles/ann-${x}`, { vip: 'yes' })
  await writeProfile(s, `/v1/profiles/eve-${x}`, { vip: 'yes' })
}

const behavior = (days: number, rules: unknown[], operator = 'and') => ({
  behavior_profile_operator: 'and',
  targeting_type: 'install_id',
  behavior: { days, behavior_rule_operator: operator, rules },
})
const profile = (criteria: unknown[], operator = 'and') => ({
  behavior_profile_operator: 'and',
  targeting_type: 'install_id',
  profile: { criteria, operator },
})
const purchased = { rule_type: 'event', event_name: 'purchase', count: 1, count_operator: 'at_least' }
const tierGold = { key: 'tier', scope: 'app', date_type: 'string', operator: 'is one of', values: ['gold'] }

/**
 * Audiences of every rule kind on app A, each with the counts the uploaded data implies (members
 * named in the comment; has_push: i1, i3, i4 have an enabled token; seen in 30 days: every member
 * with a session, i.e. all but i5). The create answer carries them (it waits for the count).
 */
const COUNTED: { name: string; rules: unknown; counts: [number, number, number] }[] = [
  {
    name: 'everyone',
    rules: { behavior_profile_operator: 'and', targeting_type: 'install_id' },
    counts: [6, 3, 5],
  },
  // i1, i2, i6
  { name: 'event', rules: behavior(30, [purchased]), counts: [3, 1, 3] },
  // i1 (two purchases)
  {
    name: 'event count greater than',
    rules: behavior(30, [{ ...purchased, count: 1, count_operator: 'greater_than' }]),
    counts: [1, 1, 1],
  },
  // i1, i2: shoes within the last 7 days (i6's is 20 days old)
  {
    name: 'event with filter and window',
    rules: behavior(30, [
      {
        ...purchased,
        conditions: {
          operator: 'and',
          filters: [{ dimension_name: 'category', operator: 'is one of', value: 'shoes' }],
        },
        neg_time_window: [7, 0],
      },
    ]),
    counts: [2, 1, 2],
  },
  // i1: a purchase above 100
  {
    name: 'event with numeric filter',
    rules: behavior(30, [
      {
        ...purchased,
        conditions: {
          operator: 'and',
          filters: [{ dimension_name: 'price', operator: 'greater_than', value: '100' }],
        },
      },
    ]),
    counts: [1, 1, 1],
  },
  // i3: its view carries the device's country; i5's device has none
  {
    name: 'event with a device dimension',
    rules: behavior(30, [
      {
        rule_type: 'event',
        event_name: 'view',
        count: 1,
        count_operator: 'at_least',
        conditions: {
          operator: 'and',
          filters: [{ dimension_name: 'Country', operator: 'is one of', value: 'fr' }],
        },
      },
    ]),
    counts: [1, 1, 1],
  },
  // i3, i4, i5
  {
    name: 'not-event',
    rules: behavior(30, [
      { rule_type: 'not-event', event_name: 'purchase', count: 1, count_operator: 'at_least' },
    ]),
    counts: [3, 2, 2],
  },
  // i1, i2
  {
    name: 'session',
    rules: behavior(7, [{ rule_type: 'session', count: 1, count_operator: 'at_least' }]),
    counts: [2, 1, 2],
  },
  // i3, i4, i5, i6
  {
    name: 'not-session',
    rules: behavior(7, [{ rule_type: 'not-session', count: 1, count_operator: 'at_least' }]),
    counts: [4, 2, 3],
  },
  // first session within 15 days: i1 (3 days), i2 (2), i3 (10)
  { name: 'first-session', rules: behavior(15, [{ rule_type: 'first-session' }]), counts: [3, 2, 3] },
  // ann (i1), cat (i3)
  { name: 'profile is one of', rules: profile([tierGold]), counts: [2, 2, 2] },
  // no app tier: i4 (anonymous), i5 (dan), i6 (eve)
  {
    name: 'profile is not defined',
    rules: profile([{ key: 'tier', scope: 'app', operator: 'is_not_defined' }]),
    counts: [3, 1, 2],
  },
  // org profile vip: ann (i1), eve (i6)
  {
    name: 'org profile is defined',
    rules: profile([{ key: 'vip', scope: 'org', operator: 'is defined' }]),
    counts: [2, 1, 2],
  },
  // age above 30: ann (i1)
  {
    name: 'profile number',
    rules: profile([
      { key: 'age', scope: 'app', date_type: 'number', operator: 'greater_than', values: ['30'] },
    ]),
    counts: [1, 1, 1],
  },
  // purchase and gold: i1
  {
    name: 'behavior and profile',
    rules: { ...behavior(30, [purchased]), profile: { criteria: [tierGold], operator: 'and' } },
    counts: [1, 1, 1],
  },
  // purchase or gold: i1, i2, i3, i6
  {
    name: 'behavior or profile',
    rules: {
      ...behavior(30, [purchased]),
      behavior_profile_operator: 'or',
      profile: { criteria: [tierGold], operator: 'and' },
    },
    counts: [4, 2, 4],
  },
  // a purchase in 30 days or a session in the last 7: i1, i2, i6
  {
    name: 'three rules',
    rules: behavior(
      30,
      [purchased, { rule_type: 'session', count: 1, count_operator: 'at_least', neg_time_window: [7, 0] }],
      'or',
    ),
    counts: [3, 1, 3],
  },
]

const countsOf = (body: unknown) => {
  const c = (
    body as { segmentation_count: { user_count: number; has_push: number; seen_last_thirty: number } }
  ).segmentation_count
  return [c.user_count, c.has_push, c.seen_last_thirty]
}

/**
 * POST …/audiences/preview counts rules that are not saved: the same counts a saved audience gets,
 * every issue of bad rules (422 with its path), nothing stored, another org's app refused.
 */
async function previews(s: Scenario) {
  const preview = `${audiencesOf(s, s.appA)}/preview`
  for (const a of COUNTED) {
    const answer = await s.api('POST', preview, { target_rules: a.rules })
    expect(answer.status, a.name).toBe(200)
    const body = answer.body as Record<string, unknown>
    expect([body.user_count, body.has_push, body.seen_last_thirty], a.name).toEqual(a.counts)
    expect(body.calculated_at).toMatch(ISO)
  }
  const bad = await s.api('POST', preview, {
    target_rules: {
      behavior: {
        rules: [{ rule_type: 'event', event_name: 'x', count_operator: 'sometimes' }, { rule_type: 'event' }],
      },
    },
  })
  expect(bad.status).toBe(422)
  expect((bad.body as { errors: string[] }).errors).toEqual([
    'target_rules.behavior.rules[0].count_operator: unknown count_operator "sometimes": expected one of less_than, greater_than, exactly, at_least, at_most',
    'target_rules.behavior.rules[1].event_name: event_name is required for a event rule',
  ])
  const missing = await s.api('POST', preview, {})
  expect(missing.status).toBe(422)
  expect((missing.body as { errors: string[] }).errors).toEqual(['target_rules: target_rules is required'])
  const foreign = await s.otherApi('POST', `/api/v6/orgs/${s.other.orgId}/apps/${s.appA}/audiences/preview`, {
    target_rules: {},
  })
  expect(foreign.status).toBe(403)
  expect((await s.api('GET', audiencesOf(s, s.appA))).body).toEqual([])
}

async function countsOfEveryRuleKind(s: Scenario) {
  const base = audiencesOf(s, s.appA)
  const ids: number[] = []
  for (const a of COUNTED) {
    const created = await s.api('POST', base, { name: a.name, target_rules: a.rules })
    expect(created.status, a.name).toBe(201)
    expect(countsOf(created.body), a.name).toEqual(a.counts)
    ids.push((created.body as { id: number }).id)
  }
  // The list answers the same counts, from the last computation, with its time.
  const list = (await s.api('GET', base)).body as {
    id: number
    name: string
    segmentation_count: { updated_at: string | null }
  }[]
  expect(list.map((a) => a.name)).toEqual(COUNTED.map((a) => a.name))
  for (const [i, item] of list.entries()) {
    expect(countsOf(item), item.name).toEqual(COUNTED[i]!.counts)
    expect(item.segmentation_count.updated_at).toMatch(ISO)
  }
  // Detail and segmentation of one.
  const id = ids[1]!
  const detail = await s.api('GET', `${base}/${id}`)
  expect(detail.body).toMatchObject({
    segmentation_id: String(id),
    user_count: 3,
    has_push: 1,
    seen_last_thirty: 3,
  })
  const seg = await s.api('GET', `${base}/${id}/segmentation`)
  expect(seg.body).toMatchObject({ segmentation_id: id, user_count: 3, has_push: 1, seen_last_thirty: 3 })
  expect((seg.body as { last_calculated_on: string }).last_calculated_on).toMatch(ISO)
  expect((detail.body as { updated_at: string }).updated_at).toMatch(ISO)
  // Stored in audience_counts, one current row per audience.
  const rows = await s.store.query<{ audience_id: string | number; user_count: string | number }>(
    'SELECT audience_id, user_count FROM audience_counts FINAL WHERE audience_id IN {ids:Array(UInt64)} ORDER BY audience_id',
    { ids },
  )
  expect(rows.map((r) => Number(r.user_count))).toEqual(COUNTED.map((a) => a.counts[0]))
}

/**
 * New data changes no count until the counts are computed again: by the scheduled refresh (the
 * test runs it every 2 s), or at once by POST …/segmentation.
 */
async function refreshAndRecompute(s: Scenario) {
  const base = audiencesOf(s, s.appA)
  const list = (await s.api('GET', base)).body as { id: number; name: string }[]
  const buyers = list.find((a) => a.name === 'event')!
  const buy = (install: string): Install => ({
    install,
    sessions: [0],
    push: 'enabled',
    events: [{ name: 'purchase', daysAgo: 0 }],
  })
  await uploadInstalls(s, s.appA, [buy(`i7-${s.suffix}`)])
  const refreshed = await waitFor(
    () => s.api('GET', `${base}/${buyers.id}/segmentation`),
    (r) => (r.body as { user_count: number }).user_count === 4,
    { what: 'the scheduled refresh to count the new buyer', timeoutMs: 60_000 },
  )
  expect(refreshed.body).toMatchObject({ user_count: 4, has_push: 2, seen_last_thirty: 4 })
  const jobs = await s.sluice.admin<{ job: string; status: number; output: { audiences: number } | null }[]>(
    'GET',
    '/jobs',
  )
  const job = jobs.find((j) => j.job === 'audience-counts')
  expect(job?.status).toBe(200)
  expect(job?.output?.audiences).toBeGreaterThanOrEqual(COUNTED.length)

  await uploadInstalls(s, s.appA, [buy(`i8-${s.suffix}`)])
  const before = Date.now()
  const recomputed = await s.api('POST', `${base}/${buyers.id}/segmentation`)
  expect(recomputed.status).toBe(200)
  expect(recomputed.body).toMatchObject({
    segmentation_id: buyers.id,
    user_count: 5,
    has_push: 3,
    seen_last_thirty: 5,
  })
  expect(
    Date.parse((recomputed.body as { last_calculated_on: string }).last_calculated_on),
  ).toBeGreaterThanOrEqual(before - 1000)
}

/**
 * Settings of the Sluice under test: a refresh every 2 s (the refresh part waits for one), and a
 * long wait for the first counts so a busy machine does not answer a create before its count.
 */
export const AUDIENCE_TEST_ENV = {
  SLUICE_AUDIENCE_REFRESH_SECONDS: '2',
  SLUICE_AUDIENCE_COUNT_WAIT_MS: '30000',
}
