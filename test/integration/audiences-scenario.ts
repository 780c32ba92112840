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
    return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown), headers: res.headers }
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
  const [stored] = await store.query<{ org_id: string | number; app_id: string; name: string; target_rules_given: string }>(
    'SELECT org_id, app_id, name, target_rules_given FROM audiences FINAL WHERE id = {id:UInt64}',
    { id: a1.id },
  )
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
      segmentation_count: expect.objectContaining({ updated_at: expect.stringMatching(ISO) as unknown }) as unknown,
    },
  ])
  // App B has its own audiences: none.
  expect(await api('GET', baseB)).toMatchObject({ status: 200, body: [] })

  return { api, otherApi, base, baseB, a1, installs, other, tenant, appZ }
}
