import { readFileSync } from 'node:fs'
import { expect } from 'vitest'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { documentedFetch } from '../helpers/openapi-check.ts'

/**
 * The campaign API contract (push CRUD, validation, list and search), run the same way in both
 * modes. In-app campaigns and execution have scenarios of their own.
 */

/** The fields of campaign answers the scenarios read (campaigns, lists, errors). */
export interface Answer {
  id: number
  name: string
  error: string
  errors: string[]
  creatives: { id: number; letter: string; file_phone?: string; file_tablet?: string }[]
  audiences: {
    campaign_type: string
    control_group_percent: number
    target_rules: { profile: { criteria: unknown[] } }
  }
  campaigns: { id: number; name: string; status: string; sends: number }[]
  records_count: number
  total_records: number
  [field: string]: unknown
}

export interface CampaignClient {
  base: string
  req(method: string, path: string, body?: unknown): Promise<{ status: number; body: Answer }>
  raw(
    method: string,
    path: string,
    body: string,
    contentType?: string,
  ): Promise<{ status: number; body: Answer }>
}

export function campaignClient(
  sluice: InProcessSluice,
  auth: string,
  orgId: number,
  appId: string,
): CampaignClient {
  const base = `/api/v6/orgs/${orgId}/apps/${appId}`
  const raw: CampaignClient['raw'] = async (method, path, body, contentType = 'application/json') => {
    const res = await documentedFetch(`${sluice.url}${path.startsWith('/api/') ? path : base + path}`, {
      method,
      headers: { Authorization: auth, 'Content-Type': contentType },
      ...(method === 'GET' || method === 'DELETE' ? {} : { body }),
    })
    const text = await res.text()
    return { status: res.status, body: (text === '' ? undefined : JSON.parse(text)) as Answer }
  }
  return {
    base,
    raw,
    req: (method, path, body) => raw(method, path, body === undefined ? '' : JSON.stringify(body)),
  }
}

/** A push campaign exercising every field of the spec. */
export function fullPushCampaign(over: Record<string, unknown> = {}) {
  return {
    name: 'Spring sale',
    status: 'draft',
    goal: 'monetize',
    conversion_event: {
      event_name: 'Purchase',
      conversion_attributes: {
        filters: [{ dimension_name: 'App Version', operator: 'is_one_of', value: '2.0,2.1' }],
        operator: 'and',
      },
    },
    audiences: {
      campaign_type: 'everyone',
      control_group_percent: 10,
    },
    schedule: {
      recurring: {
        begin_date: '2030-03-01T09:00:00Z',
        end_date: '2030-03-31T09:00:00Z',
        starting_time_zone_id: 25,
        push_throttle_num_msgs: 1000,
        frequency_attributes: [
          { name: 'messages_per_days', days: 7, count: 2, messages_atleast_days_apart: 1 },
        ],
        intervals: [{ interval: 'weekly', day_of_week: 'sunday', on_day: 0 }],
      },
    },
    creatives: [
      {
        title: 'A-side',
        percent: 60,
        key_values: [{ key: 'promo', value: 'SPRING' }],
        build_attributes: {
          push_message: 'Spring sale: 20% off',
          push_title: 'Sale',
          push_subtitle: 'Today only',
          push_category: 'like_dislike',
          ll_deep_link_url: 'myapp://sale',
          sound: 'default',
        },
      },
      {
        title: 'B-side',
        percent: 40,
        key_values: [],
        build_attributes: { push_message: 'Sale now on' },
      },
    ],
    ...over,
  }
}

/** test/fixtures/campaign-bodies/campaigns-api-script.json, aimed at these saved audiences as run.py does. */
export function scriptCampaignBody(...audienceIds: number[]) {
  const body = JSON.parse(
    readFileSync(new URL('../fixtures/campaign-bodies/campaigns-api-script.json', import.meta.url), 'utf8'),
  ) as {
    name: string
    audiences: { target_rules: { audiences: number[] } }
    creatives: Record<string, unknown>[]
  }
  body.audiences.target_rules.audiences = audienceIds
  return body
}

export async function runCampaignCrudScenario(sluice: InProcessSluice, suffix: string) {
  const appId = `cmp-${suffix}`
  const tenant = await sluice.tenant(`campaigns-${suffix}`, [appId, `${appId}-2`])
  const other = await sluice.tenant(`campaigns-other-${suffix}`, [`cmp-other-${suffix}`])
  const api = campaignClient(sluice, tenant.auth, tenant.orgId, appId)

  // Create: 201 with the spec's shape; ids assigned, letters A, B, interval_start added.
  const created = await api.req('POST', '/push/campaigns', fullPushCampaign())
  expect(created.status).toBe(201)
  const id = created.body.id
  expect(Number.isInteger(id) && id > 0).toBe(true)
  const [idA, idB] = created.body.creatives.map((c) => c.id)
  expect(idA).toBeGreaterThan(0)
  expect(idB).toBe(idA! + 1)
  const expected = {
    id,
    name: 'Spring sale',
    status: 'draft',
    goal: 'monetize',
    conversion_event: {
      event_name: 'Purchase',
      conversion_attributes: {
        filters: [{ dimension_name: 'App Version', operator: 'is_one_of', value: '2.0,2.1' }],
        operator: 'and',
      },
    },
    audiences: { campaign_type: 'everyone', control_group_percent: 10 },
    schedule: {
      recurring: {
        begin_date: '2030-03-01T09:00:00Z',
        end_date: '2030-03-31T09:00:00Z',
        starting_time_zone_id: 25,
        push_throttle_num_msgs: 1000,
        frequency_attributes: [
          { name: 'messages_per_days', days: 7, count: 2, messages_atleast_days_apart: 1 },
        ],
        // 2030-03-01 is a Friday: the first Sunday at 09:00 UTC is 2030-03-03.
        intervals: [
          {
            interval: 'weekly',
            day_of_week: 'sunday',
            on_day: 0,
            interval_start: '2030-03-03T09:00:00.000Z',
          },
        ],
      },
    },
    creatives: [
      {
        id: idA,
        letter: 'A',
        title: 'A-side',
        percent: 60,
        key_values: [{ key: 'promo', value: 'SPRING' }],
        build_attributes: {
          push_message: 'Spring sale: 20% off',
          push_title: 'Sale',
          push_subtitle: 'Today only',
          push_category: 'like_dislike',
          ll_deep_link_url: 'myapp://sale',
          sound: 'default',
        },
      },
      {
        id: idB,
        letter: 'B',
        title: 'B-side',
        percent: 40,
        key_values: [],
        build_attributes: { push_message: 'Sale now on' },
      },
    ],
  }
  expect(created.body).toEqual(expected)
  expect(await api.req('GET', `/push/campaigns/${id}`)).toEqual({ status: 200, body: expected })

  // A second campaign gets the next ids; a single creative object keeps its shape in answers.
  const single = await api.req('POST', '/push/campaigns', {
    name: 'Welcome',
    status: 'draft',
    goal: 'activate',
    audiences: {
      target_rules: {
        behavior_profile_operator: 'and',
        profile: {
          operator: 'and',
          criteria: [{ key: 'plan', scope: 'app', operator: 'is one of', values: ['gold'] }],
        },
      },
    },
    schedule: { begin_immediately: { push_throttle_num_msgs: 0 } },
    creatives: { title: 'Hi', build_attributes: { push_message: 'Welcome!' } },
  })
  expect(single.status).toBe(201)
  expect(single.body.id).toBe(id + 1)
  expect(single.body.creatives).toEqual({
    id: idB! + 1,
    letter: 'A',
    title: 'Hi',
    percent: 100,
    key_values: [],
    build_attributes: { push_message: 'Welcome!' },
  })
  expect(single.body.audiences.campaign_type).toBe('target_rules')
  expect(single.body.audiences.control_group_percent).toBe(0)
  expect(single.body.audiences.target_rules.profile.criteria[0]).toMatchObject({
    key: 'plan',
    operator: 'is_one_of',
    values: ['gold'],
  })

  // A saved audience of this app: accepted; one that does not exist here: 422.
  const audience = await api.req('POST', '/audiences', {
    name: 'Gold',
    target_rules: {
      profile: {
        operator: 'and',
        criteria: [{ key: 'plan', scope: 'app', operator: 'is one of', values: ['gold'] }],
      },
    },
  })
  expect(audience.status).toBe(201)
  const saved = await api.req(
    'POST',
    '/push/campaigns',
    fullPushCampaign({ audiences: { audience_id: audience.body.id } }),
  )
  expect(saved.status).toBe(201)
  expect(saved.body.audiences).toEqual({
    campaign_type: 'audience',
    control_group_percent: 0,
    audience_id: audience.body.id,
  })
  expect(
    await api.req('POST', '/push/campaigns', fullPushCampaign({ audiences: { audience_id: 999_999 } })),
  ).toMatchObject({
    status: 422,
    body: { error: 'audiences.audience_id: audience 999999 does not exist in this app' },
  })
  expect((await api.req('DELETE', `/push/campaigns/${saved.body.id}`)).status).toBe(204)

  // The body the original's own campaign script sends (saved_audience, target_rules.audiences),
  // with this app's audience as its run.py puts it: stored and answered as sent.
  const script = scriptCampaignBody(audience.body.id)
  const fromScript = await api.req('POST', '/push/campaigns', script)
  expect(fromScript.status).toBe(201)
  expect(fromScript.body).toEqual({
    id: fromScript.body.id,
    ...script,
    creatives: [
      {
        ...script.creatives[0],
        id: fromScript.body.creatives[0]!.id,
        letter: 'A',
        percent: 100,
        key_values: [],
      },
    ],
  })
  const storedScript = await sluice.running.runtime.store.query<{
    body: string
    status: string
    name: string
  }>(`SELECT body, status, name FROM campaigns FINAL WHERE id = {id:UInt64} AND app_id = {app:String}`, {
    id: fromScript.body.id,
    app: appId,
  })
  expect(storedScript).toHaveLength(1)
  expect(storedScript[0]).toMatchObject({ status: 'draft', name: script.name })
  expect((JSON.parse(storedScript[0]!.body) as { audiences: unknown }).audiences).toEqual({
    campaign_type: 'saved_audience',
    control_group_percent: 5,
    audience_ids: [audience.body.id],
  })
  expect((await api.req('GET', `/push/campaigns/${fromScript.body.id}`)).body).toEqual(fromScript.body)
  // Several audiences: their union; each id must be an audience of this app, named by its path.
  const otherApp = campaignClient(sluice, tenant.auth, tenant.orgId, `${appId}-2`)
  const elsewhere = await otherApp.req('POST', '/audiences', { name: 'Elsewhere', target_rules: {} })
  expect(elsewhere.status).toBe(201)
  const several = await api.req(
    'POST',
    '/push/campaigns',
    scriptCampaignBody(audience.body.id, elsewhere.body.id, 999_999),
  )
  expect(several).toMatchObject({
    status: 422,
    body: {
      error: `audiences.target_rules.audiences[1]: audience ${elsewhere.body.id} does not exist in this app`,
      errors: [
        `audiences.target_rules.audiences[1]: audience ${elsewhere.body.id} does not exist in this app`,
        'audiences.target_rules.audiences[2]: audience 999999 does not exist in this app',
      ],
    },
  })
  expect((await api.req('DELETE', `/push/campaigns/${fromScript.body.id}`)).status).toBe(204)

  // Malformed: 400. Rules broken: 422 naming each JSON path.
  expect(await api.raw('POST', '/push/campaigns', '{"name":')).toMatchObject({
    status: 400,
    body: { error: 'request body is not valid JSON' },
  })
  expect((await api.req('POST', '/push/campaigns', [1, 2])).status).toBe(400)
  const broken = await api.req(
    'POST',
    '/push/campaigns',
    fullPushCampaign({
      goal: 'win',
      audiences: { control_group_percent: 101 },
    }),
  )
  expect(broken.status).toBe(422)
  expect(broken.body.errors).toEqual(
    expect.arrayContaining([
      expect.stringMatching(/^goal: /),
      expect.stringMatching(/^audiences\.control_group_percent: must be 0\.\.100/),
    ]),
  )
  const sums = await api.req(
    'POST',
    '/push/campaigns',
    fullPushCampaign({
      schedule: { begin_immediately: {}, optimized: { fallback_time: '2030-01-01T10:00:00Z' } },
      creatives: [
        { percent: 50, build_attributes: { push_message: 'a' } },
        { percent: 40, build_attributes: { push_message: 'b' } },
      ],
    }),
  )
  expect(sums.status).toBe(422)
  expect(sums.body.errors).toEqual([
    'schedule: must hold exactly one of begin_immediately, on_schedule, recurring, optimized (found begin_immediately, optimized)',
    'creatives: percent weights must sum to 100 (they sum to 90)',
  ])
  expect(sums.body.error).toBe(sums.body.errors[0])
  const rules = await api.req(
    'POST',
    '/push/campaigns',
    fullPushCampaign({
      audiences: {
        target_rules: { behavior: { rules: [{ rule_type: 'event', count_operator: 'sometimes' }] } },
      },
    }),
  )
  expect(rules.status).toBe(422)
  expect(
    rules.body.errors.every((e: string) => e.startsWith('audiences.target_rules.behavior.rules[0]')),
  ).toBe(true)
  const recurringBad = await api.req(
    'POST',
    '/push/campaigns',
    fullPushCampaign({
      schedule: {
        recurring: {
          begin_date: '2030-03-01T09:00:00Z',
          end_date: '2030-02-01T09:00:00Z',
          starting_time_zone_id: 999,
          intervals: [{ interval: 'weekly' }],
        },
      },
    }),
  )
  expect(recurringBad.status).toBe(422)
  expect(recurringBad.body.errors).toEqual([
    expect.stringMatching(/^schedule\.recurring\.starting_time_zone_id: must be one of the ids/),
  ])
  const recurringRules = await api.req(
    'POST',
    '/push/campaigns',
    fullPushCampaign({
      schedule: {
        recurring: {
          begin_date: '2030-03-01T09:00:00Z',
          end_date: '2030-02-01T09:00:00Z',
          intervals: [{ interval: 'weekly' }],
        },
      },
    }),
  )
  expect(recurringRules.body.errors).toEqual([
    'schedule.recurring.end_date: must be after begin_date',
    'schedule.recurring.intervals[0].day_of_week: is required for a weekly interval',
  ])

  // Another org's path, another org's key: 403. Unknown campaign: 404. Bad id: 400.
  const otherApi = campaignClient(sluice, other.auth, other.orgId, `cmp-other-${suffix}`)
  expect((await otherApi.req('GET', `${api.base}/push/campaigns/${id}`)).status).toBe(403)
  expect(
    (await otherApi.req('GET', `/api/v6/orgs/${other.orgId}/apps/${appId}/push/campaigns/${id}`)).status,
  ).toBe(403)
  expect((await api.req('GET', `/push/campaigns/${id + 1000}`)).status).toBe(404)
  expect((await api.req('GET', `/inapp/campaigns/${id}`)).status).toBe(404)
  expect(
    (await api.req('GET', `/api/v6/orgs/${tenant.orgId}/apps/${appId}-2/push/campaigns/${id}`)).status,
  ).toBe(404)
  expect((await api.req('GET', '/push/campaigns/abc')).status).toBe(400)
  expect((await api.req('PUT', `/push/campaigns/${id + 1000}`, fullPushCampaign())).status).toBe(404)

  // Update: the same creatives keep their ids; a new one gets a new id; status goes active.
  const updated = await api.req(
    'PUT',
    `/push/campaigns/${id}`,
    fullPushCampaign({
      name: 'Spring sale (v2)',
      creatives: [
        { title: 'A-side', percent: 50, build_attributes: { push_message: 'Spring sale: 25% off' } },
        { id: idB, title: 'B-side', percent: 30, build_attributes: { push_message: 'Sale now on' } },
        { title: 'C-side', percent: 20, build_attributes: { push_message: 'Last chance' } },
      ],
    }),
  )
  expect(updated.status).toBe(200)
  expect(updated.body.name).toBe('Spring sale (v2)')
  const ids = updated.body.creatives.map((c) => [c.letter, c.id])
  expect(ids.slice(0, 2)).toEqual([
    ['A', idA],
    ['B', idB],
  ])
  expect(ids[2]![1]).toBeGreaterThan(idB! + 1)
  expect((await api.req('GET', `/push/campaigns/${id}`)).body).toEqual(updated.body)

  // Archive: 200 with the campaign; the list tells archived from not.
  const archived = await api.req('PUT', `/push/campaigns/${single.body.id}/archive`)
  expect(archived).toMatchObject({ status: 200, body: { id: single.body.id, name: 'Welcome' } })

  // List and search.
  const all = await api.req('GET', '/campaigns')
  expect(all.status).toBe(200)
  expect(all.body).toMatchObject({ app_id: appId, records_count: 2, total_records: 2 })
  const [newest, oldest] = all.body.campaigns
  expect(newest?.id).toBe(single.body.id)
  expect(oldest).toEqual({
    id,
    name: 'Spring sale (v2)',
    message_type: 'push',
    platform: 'all',
    send_local_tz: 0,
    recurring: 1,
    begin_date: '2030-03-01T09:00:00.000Z',
    end_date: '2030-03-31T09:00:00.000Z',
    created_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    updated_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
    status: 'draft',
    sends: 0,
    open_rate: '0.00%',
  })
  expect(newest).toMatchObject({ recurring: 0, status: 'draft', begin_date: null })
  const names = async (query: string) =>
    (await api.req('GET', `/campaigns${query}`)).body.campaigns.map((c) => c.name)
  expect(await names('?sort_by=name&sort_order=asc')).toEqual(['Spring sale (v2)', 'Welcome'])
  expect(await names('?sort_by=created_at&sort_order=asc')).toEqual(['Spring sale (v2)', 'Welcome'])
  expect(await names('?is_archived=1')).toEqual(['Welcome'])
  expect(await names('?is_archived=0')).toEqual(['Spring sale (v2)'])
  expect(await names('?recurring=1')).toEqual(['Spring sale (v2)'])
  expect(await names('?recurring=2')).toEqual(['Welcome'])
  expect(await names('?recurring=3&sort_order=asc')).toEqual(['Spring sale (v2)', 'Welcome'])
  expect(await names('?channel=in-app')).toEqual([])
  expect(await names('?channel=push,inbox&status=draft,active')).toHaveLength(2)
  expect(await names('?status=scheduled')).toEqual([])
  const paged = await api.req('GET', '/campaigns?per_page=1&page_number=2&sort_order=asc')
  expect(paged.body).toMatchObject({ records_count: 1, total_records: 2, campaigns: [{ name: 'Welcome' }] })
  expect((await api.req('GET', '/campaigns?per_page=0')).status).toBe(400)
  expect((await api.req('GET', '/campaigns?status=error')).status).toBe(400)
  expect((await api.req('GET', '/campaigns?recurring=4')).status).toBe(400)
  expect((await api.req('GET', '/campaigns/search')).status).toBe(400)
  const byName = await api.req('GET', '/campaigns/search?key=spring&status=draft,error')
  expect(byName.body).toMatchObject({
    app_id: appId,
    records_count: 1,
    total_records: 1,
    campaigns: [{ id }],
  })
  // The key matches an id exactly, or a name anywhere ("2" also finds "Spring sale (v2)").
  const byId = await api.req('GET', `/campaigns/search?key=${single.body.id}`)
  const found = byId.body.campaigns
  expect(found.map((c) => c.id)).toContain(single.body.id)
  for (const c of found) expect(c.id === single.body.id || c.name.includes(String(single.body.id))).toBe(true)
  expect(byId.body.total_records).toBe(found.length)

  // Delete: 204, then gone from reads and lists.
  expect((await api.req('DELETE', `/push/campaigns/${single.body.id}`)).status).toBe(204)
  expect((await api.req('GET', `/push/campaigns/${single.body.id}`)).status).toBe(404)
  expect((await api.req('DELETE', `/push/campaigns/${single.body.id}`)).status).toBe(404)
  expect((await api.req('GET', '/campaigns')).body).toMatchObject({ total_records: 1, campaigns: [{ id }] })
  // Another key's org never sees this app's campaigns.
  expect((await otherApi.req('GET', `${api.base}/campaigns`)).status).toBe(403)
}
