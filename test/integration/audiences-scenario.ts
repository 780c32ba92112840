import { expect } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { postSdk, sdkReceiptDone, uuid } from '../helpers/ingestion-scenario.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'

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
    const res = await fetch(`${sluice.url}${path}`, {
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
  /** Push token uploaded (enabled) or none. */
  push: boolean
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
      ...(i.push ? { push_token: `tok-${i.install}`, push_status: 'Enabled (Prominent)' } : {}),
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
  const base = `/api/v6/orgs/${tenant.orgId}/apps/${appA}/audiences`
  const baseB = `/api/v6/orgs/${tenant.orgId}/apps/${appB}/audiences`

  // ---- The data: installs of app A, uploaded through the SDK endpoint.
  const now = Date.now()
  const installs: Install[] = [
    {
      install: `ia1-${suffix}`,
      customer: 'ann',
      sessions: [1, 3],
      push: true,
      events: [
        { name: 'purchase', daysAgo: 1, attributes: { category: 'shoes' } },
        { name: 'purchase', daysAgo: 2, attributes: { category: 'hats' } },
      ],
    },
    {
      install: `ia2-${suffix}`,
      customer: 'bob',
      sessions: [2],
      push: false,
      events: [{ name: 'purchase', daysAgo: 2, attributes: { category: 'shoes' } }],
    },
    {
      install: `ia3-${suffix}`,
      customer: 'cat',
      sessions: [10],
      push: true,
      events: [{ name: 'view', daysAgo: 10 }],
    },
    { install: `ia4-${suffix}`, sessions: [20], push: true, events: [] },
  ]
  for (const i of installs) {
    const tx = await postSdk(sluice, appA, sdkRows(i, now))
    const receipt = await sdkReceiptDone(sluice, appA, tx)
    expect(receipt.rejected).toBe(0)
  }

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
  const created = await api('POST', base, { name: '  Buyers  ', target_rules: rules1 })
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
  expect(stored).toMatchObject({ app_id: appA, name: 'Buyers' })
  expect(Number(stored!.org_id)).toBe(tenant.orgId)
  expect(JSON.parse(stored!.target_rules_given)).toEqual(rules1)

  // ---- Detail, segmentation, list.
  const detail = await api('GET', `${base}/${a1.id}`)
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
  const seg = await api('GET', `${base}/${a1.id}/segmentation`)
  expect(seg.status).toBe(200)
  expect(Object.keys(seg.body as object).sort()).toEqual([
    'has_push',
    'last_calculated_on',
    'seen_last_thirty',
    'segmentation_id',
    'user_count',
  ])
  expect((seg.body as { segmentation_id: unknown }).segmentation_id).toBe(a1.id)

  const list = await api('GET', base)
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
  // App B has its own audiences: none.
  expect(await api('GET', baseB)).toMatchObject({ status: 200, body: [] })

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
  expect(await api('PUT', `${base}/${a1.id}`, { name: 'Viewers' })).toMatchObject({
    status: 422,
    body: {
      error: 'target_rules: target_rules is required',
      errors: ['target_rules: target_rules is required'],
    },
  })
  const put = await api('PUT', `${base}/${a1.id}`, { name: 'Viewers', target_rules: rules2 })
  expect(put.status).toBe(200)
  expect(put.body).toMatchObject({
    id: a1.id,
    name: 'Viewers',
    created_at: a1.created_at,
    target_rules: rules2,
  })
  const patched = await api('PATCH', `${base}/${a1.id}`, { name: 'Viewers (renamed)' })
  expect(patched.status).toBe(200)
  expect(patched.body).toMatchObject({ id: a1.id, name: 'Viewers (renamed)', target_rules: rules2 })
  expect(await api('PATCH', `${base}/${a1.id}`, {})).toMatchObject({
    status: 422,
    body: { errors: ['a PATCH changes name or target_rules: give at least one'] },
  })
  const afterUpdate = (await api('GET', base)).body as {
    name: string
    created_at: string
    updated_at: string
  }[]
  expect(afterUpdate).toHaveLength(1)
  expect(afterUpdate[0]!.name).toBe('Viewers (renamed)')
  expect(afterUpdate[0]!.created_at).toBe(a1.created_at)
  expect(Date.parse(afterUpdate[0]!.updated_at)).toBeGreaterThanOrEqual(Date.parse(a1.created_at))

  // ---- Bad input: malformed 400, breaking a rule 422 with the JSON path, wrong media type 415.
  expect(await api('POST', base, undefined, '{"name": ')).toMatchObject({
    status: 400,
    body: { error: 'request body is not valid JSON', errors: ['request body is not valid JSON'] },
  })
  expect(await api('POST', base, [1, 2])).toMatchObject({
    status: 400,
    body: { errors: ['the body must be a JSON object'] },
  })
  const badRule = await api('POST', base, {
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
  const textPlain = await fetch(`${sluice.url}${base}`, {
    method: 'POST',
    headers: { Authorization: tenant.auth, 'Content-Type': 'text/plain' },
    body: JSON.stringify({ name: 'x', target_rules: rules1 }),
  })
  expect(textPlain.status).toBe(415)
  // Nothing of the refused writes was stored.
  expect(((await api('GET', base)).body as unknown[]).length).toBe(1)

  // ---- Auth: no credentials 401, a key without the campaigns scope 403.
  expect((await fetch(`${sluice.url}${base}`)).status).toBe(401)
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
  expect(await eventsOnly('GET', base)).toMatchObject({
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
  expect((await otherApi('GET', base)).status).toBe(403)
  expect((await otherApi('GET', `${base}/${a1.id}`)).status).toBe(403)
  expect((await otherApi('POST', base, { name: 'x', target_rules: rules1 })).status).toBe(403)
  expect((await api('GET', `/api/v6/orgs/${tenant.orgId}/apps/${appZ}/audiences`)).status).toBe(403)
  expect((await api('GET', `/api/v6/orgs/${tenant.orgId}/apps/no-such-app/audiences`)).status).toBe(403)
  // Our own key, our audience under our other app: 404.
  expect(await api('GET', `${baseB}/${a1.id}`)).toMatchObject({ status: 404 })
  expect(await api('DELETE', `${baseB}/${a1.id}`)).toMatchObject({ status: 404 })
  expect(await api('GET', `${base}/not-a-number`)).toMatchObject({ status: 404 })
  // The audience is as we left it.
  expect(await api('GET', `${base}/${a1.id}`)).toMatchObject({ status: 200, body: { target_rules: rules2 } })

  // ---- Soft delete: gone from the API, kept in the table; ids are never reused.
  const second = await api('POST', base, { name: 'Second', target_rules: rules1 })
  expect(second.status).toBe(201)
  const a2 = second.body as { id: number }
  expect(a2.id).toBe(a1.id + 1)
  expect(await api('DELETE', `${base}/${a2.id}`)).toMatchObject({ status: 204, body: undefined })
  for (const [method, path, body] of [
    ['GET', `${base}/${a2.id}`, undefined],
    ['GET', `${base}/${a2.id}/segmentation`, undefined],
    ['POST', `${base}/${a2.id}/segmentation`, undefined],
    ['PATCH', `${base}/${a2.id}`, { name: 'back' }],
    ['DELETE', `${base}/${a2.id}`, undefined],
  ] as const)
    expect((await api(method, path, body)).status, `${method} ${path}`).toBe(404)
  expect(((await api('GET', base)).body as { id: number }[]).map((a) => a.id)).toEqual([a1.id])
  const [deletedRow] = await store.query<{ deleted_at: string | null; name: string }>(
    'SELECT deleted_at, name FROM audiences FINAL WHERE id = {id:UInt64}',
    { id: a2.id },
  )
  expect(deletedRow?.name).toBe('Second')
  expect(deletedRow?.deleted_at).not.toBeNull()
  const third = await api('POST', base, { name: 'Third', target_rules: rules1 })
  expect((third.body as { id: number }).id).toBe(a2.id + 1)

  return { api, otherApi, base, baseB, a1, installs, other, tenant, appZ }
}
