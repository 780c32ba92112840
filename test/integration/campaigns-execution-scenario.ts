import { expect } from 'vitest'
import type { RecordBatch } from '../../pipelines/connectors/bus/bus.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { variantOf } from '../../pipelines/campaigns/assign-variant.ts'
import { campaignExecutor, encodeTick } from '../../pipelines/campaigns/executor.ts'
import { encodePushRequest } from '../../schemas/push.ts'
import { postSdk, sdkReceiptDone, sessionRow, uuid } from '../helpers/ingestion-scenario.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { campaignClient } from './campaigns-scenario.ts'

/**
 * Push campaigns running, the same in both modes (needs SLUICE_CAMPAIGN_TICK_MS low, e.g. 500):
 * scheduled a few seconds ahead they fire once; deliveries follow the A/B split and hold the
 * control group out; every assignment is recorded; a second executor dispatching the same slots
 * sends nothing twice; conversions per variant; local-time delivery waits for each device's
 * wall-clock time; drafts never send; throttled occurrences spread over one-minute slots.
 */

export const EXECUTION_ENV = { SLUICE_CAMPAIGN_TICK_MS: '500' }

interface Delivery {
  install_uuid: string
  creative: string
  status: string
  request_id: string
}

const iso = (ms: number) => new Date(ms).toISOString()

export async function runExecutionScenario(sluice: InProcessSluice, store: Store, suffix: string) {
  const appId = `exec-${suffix}`
  const tenant = await sluice.tenant(`exec-${suffix}`, [appId])
  const api = campaignClient(sluice, tenant.auth, tenant.orgId, appId)

  // 60 installs with push tokens (half in UTC, half in New York), 2 without.
  const installs = Array.from({ length: 60 }, (_, i) => `ex-${suffix}-${String(i).padStart(2, '0')}`)
  const at = Date.now() - 120_000
  const tx = await postSdk(sluice, appId, [
    ...installs.map((install, i) => ({
      ...sessionRow({ install, customer: `cust-${install}`, at, country: 'us', model: 'm' }),
      device_timezone: i % 2 === 0 ? 'UTC' : 'America/New_York',
    })),
    ...['nt-1', 'nt-2'].map((n) => ({
      ...sessionRow({ install: `ex-${suffix}-${n}`, at, country: 'us', model: 'm' }),
      push_token: '',
    })),
  ])
  await sdkReceiptDone(sluice, appId, tx)

  const deliveries = (campaignId: number) =>
    store.query<Delivery>(
      `SELECT install_uuid, creative, status, request_id FROM push_deliveries FINAL
       WHERE app_id = {app:String} AND campaign_id = {id:UInt64} ORDER BY install_uuid`,
      { app: appId, id: campaignId },
    )
  const creatives = [
    { title: 'A', percent: 70, build_attributes: { push_message: 'Version A', push_title: 'Hi' } },
    { title: 'B', percent: 30, build_attributes: { push_message: 'Version B' } },
  ]
  const campaign = (schedule: unknown, over: Record<string, unknown> = {}) => ({
    name: 'Exec',
    status: 'active',
    goal: 'monetize',
    conversion_event: { event_name: 'Purchase' },
    audiences: { campaign_type: 'everyone', control_group_percent: 20 },
    schedule,
    creatives,
    ...over,
  })

  // A draft due now never sends; an active campaign scheduled 3 s ahead is `scheduled`, then fires.
  const draft = await api.req(
    'POST',
    '/push/campaigns',
    campaign({ begin_immediately: {} }, { status: 'draft' }),
  )
  expect(draft.status).toBe(201)
  const begin = Date.now() + 3000
  const created = await api.req(
    'POST',
    '/push/campaigns',
    campaign({ on_schedule: { begin_date: iso(begin) } }),
  )
  expect(created.status).toBe(201)
  const id = created.body.id
  const [idA, idB] = created.body.creatives.map((c) => c.id)
  if (Date.now() < begin - 500) {
    const listed = await api.req('GET', `/campaigns/search?key=${id}`)
    expect(listed.body.campaigns.find((c) => c.id === id)?.status).toBe('scheduled')
  }

  const expected = new Map(
    installs.map((install) => [
      install,
      variantOf(id, install, 20, [
        { letter: 'A', percent: 70 },
        { letter: 'B', percent: 30 },
      ]),
    ]),
  )
  const targeted = installs.filter((i) => expected.get(i) !== 'control')
  const delivered = await waitFor(
    () => deliveries(id),
    (rows) => rows.length >= targeted.length,
    { what: `${targeted.length} deliveries of campaign ${id}`, timeoutMs: 60_000 },
  )
  expect(Date.now()).toBeGreaterThanOrEqual(begin)
  // Exactly the non-control members, each once, with its creative, all sent.
  expect(delivered.map((d) => d.install_uuid)).toEqual(targeted)
  for (const d of delivered) {
    expect(d.creative).toBe(expected.get(d.install_uuid))
    expect(d.status).toBe('sent')
    expect(d.request_id).toBe(`campaign:${id}:once:0:${d.creative}`)
  }
  const control = installs.filter((i) => expected.get(i) === 'control')
  expect(control.length).toBeGreaterThan(3)
  expect(delivered.filter((d) => d.creative === 'A').length).toBeGreaterThan(
    delivered.filter((d) => d.creative === 'B').length,
  )

  // Every assignment is recorded, control members and installs without a token included.
  const sends = await store.query<{
    install_uuid: string
    variant: string
    outcome: string
    creative_id: string | number
  }>(
    `SELECT install_uuid, variant, outcome, creative_id FROM campaign_sends FINAL WHERE campaign_id = {id:UInt64} ORDER BY install_uuid`,
    { id },
  )
  expect(sends).toHaveLength(62)
  for (const s of sends) {
    const noToken = s.install_uuid.includes('-nt-')
    const v = noToken ? s.variant : expected.get(s.install_uuid)
    expect(s.variant).toBe(v)
    expect(s.outcome).toBe(v === 'control' ? 'control' : noToken ? 'no_token' : 'targeted')
    expect(Number(s.creative_id)).toBe(v === 'A' ? idA : v === 'B' ? idB : 0)
  }

  // The file transport got the creative's message.
  const occurrence = await waitFor(
    () => api.req('GET', `/campaigns/search?key=${id}`),
    (r) => r.body.campaigns.find((c) => c.id === id)?.status === 'sent',
    { what: 'the campaign listed as sent', timeoutMs: 30_000 },
  )
  expect(occurrence.body.campaigns.find((c) => c.id === id)).toMatchObject({
    sends: targeted.length,
    status: 'sent',
  })

  // A second executor (another worker, or this one after a crash) dispatching the same slot again
  // produces the same request ids: the push pipeline plans each once, nothing is sent twice.
  const plans = await store.query<{ plan_id: string | number }>(
    `SELECT plan_id FROM campaign_occurrences FINAL WHERE campaign_id = {id:UInt64}`,
    { id },
  )
  expect(plans).toHaveLength(1)
  await store.insert('campaign_occurrences', [
    {
      campaign_id: id,
      occurrence: 'once',
      app_id: appId,
      state: 'planned',
      starts_at: begin,
      ends_at: begin,
      members: 62,
      held_out: control.length,
      capped: 0,
      targeted: targeted.length,
      plan_id: Number(plans[0]!.plan_id),
      slots: 1,
      dispatched: 0,
      error: '',
      updated_at: Date.now(),
      version: Date.now() + 1_000_000,
    },
  ])
  const second = campaignExecutor({
    store,
    produce: (records) =>
      sluice.running.runtime.bus.produce(
        sluice.running.runtime.topology.topics.pushRequests.topic,
        records.map(encodePushRequest),
      ),
  })
  await second(tickBatch())
  const requests = await store.query<{ n: string | number }>(
    `SELECT count() AS n FROM push_requests WHERE app_id = {app:String} AND campaign_id = {id:UInt64} AND status = 'planned'`,
    { app: appId, id },
  )
  await new Promise((r) => setTimeout(r, 2000))
  const again = await deliveries(id)
  expect(again).toHaveLength(targeted.length)
  const dupes = await store.query<{ n: string | number }>(
    `SELECT count() AS n FROM (SELECT install_uuid FROM push_deliveries WHERE campaign_id = {id:UInt64} GROUP BY install_uuid HAVING count() > 1)`,
    { id },
  )
  expect(Number(dupes[0]?.n)).toBe(0)
  expect(Number(requests[0]?.n)).toBeGreaterThanOrEqual(1)

  // Conversions: purchases after the send by two A installs, one B install and two control members.
  const buyers = [
    ...targeted.filter((i) => expected.get(i) === 'A').slice(0, 2),
    ...targeted.filter((i) => expected.get(i) === 'B').slice(0, 1),
    ...control.slice(0, 2),
  ]
  const purchases = await postSdk(
    sluice,
    appId,
    buyers.map((install) => ({
      type: 'e',
      uuid: uuid(),
      install_uuid: install,
      session_uuid: `s-${install}`,
      at_millis: Date.now(),
      name: 'Purchase',
    })),
  )
  await sdkReceiptDone(sluice, appId, purchases)
  const performance = await waitFor(
    () => api.req('GET', `/push/campaigns/${id}/performance`),
    (r) =>
      (r.body.variants as { conversions: number }[] | undefined)?.reduce((a, v) => a + v.conversions, 0) ===
      5,
    { what: 'five conversions', timeoutMs: 30_000 },
  )
  const variants = performance.body.variants as {
    variant: string
    assigned: number
    targeted: number
    sent: number
    conversions: number
    lift: number | null
  }[]
  const countOf = (v: string) => [...expected.values()].filter((x) => x === v).length
  const assignedTo = (v: string) => sends.filter((x) => x.variant === v).length
  expect(variants.map((v) => [v.variant, v.assigned, v.targeted, v.sent, v.conversions])).toEqual([
    ['A', assignedTo('A'), countOf('A'), countOf('A'), 2],
    ['B', assignedTo('B'), countOf('B'), countOf('B'), 1],
    ['control', assignedTo('control'), 0, 0, 2],
  ])
  expect(assignedTo('A') + assignedTo('B') + assignedTo('control')).toBe(62)
  const rate = (v: { conversions: number; assigned: number }) => v.conversions / v.assigned
  expect(variants[0]!.lift).toBeCloseTo((rate(variants[0]!) - rate(variants[2]!)) / rate(variants[2]!), 10)
  expect(variants[2]!.lift).toBeNull()

  // Saved audiences as the original's campaign script names them (saved_audience,
  // target_rules.audiences): the campaign reaches the union of their members, each once.
  const browsers = [buyers[0]!, buyers[3]!, ...targeted.filter((i) => !buyers.includes(i)).slice(0, 2)]
  const browsing = await postSdk(
    sluice,
    appId,
    browsers.map((install) => ({
      type: 'e',
      uuid: uuid(),
      install_uuid: install,
      session_uuid: `s-${install}`,
      at_millis: Date.now(),
      name: 'Browse',
    })),
  )
  await sdkReceiptDone(sluice, appId, browsing)
  const savedAudience = async (name: string, event: string) => {
    const made = await api.req('POST', '/audiences', {
      name,
      target_rules: {
        behavior_profile_operator: 'and',
        targeting_type: 'install_id',
        behavior: {
          days: 7,
          behavior_rule_operator: 'and',
          rules: [{ rule_type: 'event', event_name: event, count: 1, count_operator: 'at_least' }],
        },
      },
    })
    expect(made.status).toBe(201)
    return made.body.id
  }
  const ids = [await savedAudience('Buyers', 'Purchase'), await savedAudience('Browsers', 'Browse')]
  const union = await api.req(
    'POST',
    '/push/campaigns',
    campaign(
      { begin_immediately: {} },
      {
        audiences: {
          campaign_type: 'saved_audience',
          control_group_percent: 0,
          target_rules: { audiences: ids },
        },
      },
    ),
  )
  expect(union.status).toBe(201)
  expect(union.body.audiences).toEqual({
    campaign_type: 'saved_audience',
    control_group_percent: 0,
    target_rules: { audiences: ids },
  })
  const members = [...new Set([...buyers, ...browsers])].sort()
  expect(members).toHaveLength(7)
  const reached = await waitFor(
    () => deliveries(union.body.id),
    (rows) => rows.length >= members.length,
    { what: `deliveries to the ${members.length} members of two saved audiences`, timeoutMs: 60_000 },
  )
  expect(reached.map((r) => r.install_uuid)).toEqual(members)
  const unionSends = await store.query<{ n: string | number }>(
    `SELECT count() AS n FROM campaign_sends FINAL WHERE campaign_id = {id:UInt64}`,
    { id: union.body.id },
  )
  expect(Number(unionSends[0]?.n)).toBe(members.length)

  // Local time: 3 s ahead on UTC wall clocks. UTC devices get it now; New York's get it when their
  // clocks show that time (hours later), so the plan has them in a later slot, not yet sent.
  const localBegin = new Date(Date.now() + 3000)
  const wall = localBegin.toISOString().slice(0, 19)
  const local = await api.req(
    'POST',
    '/push/campaigns',
    campaign(
      { on_schedule: { begin_date: wall, send_local_tz: true, starting_time_zone_id: 25 } },
      { audiences: { control_group_percent: 0 } },
    ),
  )
  expect(local.status).toBe(201)
  const utc = installs.filter((_, i) => i % 2 === 0)
  const localRows = await waitFor(
    () => deliveries(local.body.id),
    (rows) => rows.length >= utc.length,
    { what: 'local-time deliveries to UTC devices', timeoutMs: 60_000 },
  )
  expect(localRows.map((r) => r.install_uuid)).toEqual(utc)
  const later = await store.query<{ due: string | number; slot: string | number }>(
    `SELECT toUnixTimestamp64Milli(due_at) AS due, slot FROM campaign_sends FINAL
     WHERE campaign_id = {id:UInt64} AND outcome = 'targeted' AND install_uuid = {ny:String}`,
    { id: local.body.id, ny: installs[1]! },
  )
  const nyDue = Number(later[0]?.due)
  expect(
    new Date(nyDue).toLocaleString('en-US', { timeZone: 'America/New_York', hourCycle: 'h23' }).slice(-8),
  ).toBe(localBegin.toISOString().slice(11, 19))
  expect(nyDue).toBeGreaterThan(Date.now() + 3_600_000)
  expect(Number(later[0]?.slot)).toBeGreaterThan(60)
  expect((await api.req('GET', `/campaigns/search?key=${local.body.id}`)).body.campaigns[0]).toMatchObject({
    status: 'active',
    send_local_tz: 1,
  })

  // Throttled: 2 messages per minute; only the first slot is due yet.
  const throttled = await api.req(
    'POST',
    '/push/campaigns',
    campaign(
      { begin_immediately: { push_throttle_num_msgs: 2 } },
      { audiences: { control_group_percent: 0 } },
    ),
  )
  const slotRows = await waitFor(
    () =>
      store.query<{ slot: string | number; n: string | number }>(
        `SELECT slot, count() AS n FROM campaign_sends FINAL WHERE campaign_id = {id:UInt64} AND outcome = 'targeted' GROUP BY slot ORDER BY slot`,
        { id: throttled.body.id },
      ),
    (rows) => rows.length > 0,
    { what: 'the throttled plan', timeoutMs: 30_000 },
  )
  expect(slotRows.map((r) => [Number(r.slot), Number(r.n)])).toEqual(
    Array.from({ length: 30 }, (_, s) => [s, 2]),
  )
  const firstSlot = await waitFor(
    () => deliveries(throttled.body.id),
    (rows) => rows.length >= 2,
    { what: 'the first throttled slot', timeoutMs: 30_000 },
  )
  expect(firstSlot).toHaveLength(2)

  // The draft never sent.
  expect(await deliveries(draft.body.id)).toEqual([])
  // Ten minutes on, slots 1..10 would go out; once the campaign is deleted, nothing more does.
  const act = await activatedAt(store, throttled.body.id)
  const capture = (now: () => number, dispatchAheadMs = 0) => {
    const captured: string[] = []
    const notBefore = new Map<string, number | undefined>()
    const run = campaignExecutor({
      store,
      now,
      dispatchAheadMs,
      produce: async (records) => {
        captured.push(...records.map((r) => r.requestId))
        for (const r of records) notBefore.set(r.requestId, r.notBefore)
      },
    })
    return { captured, notBefore, run: () => run(tickBatch()) }
  }
  // 10 min 45 s after the start, with slots handed over 30 s ahead: slots 1..10 are due and go
  // as they are; slot 11's moment is 15 s on, so it goes too, marked not to be sent before it.
  const before = capture(() => act + 10 * 60_000 + 45_000, 30_000)
  await before.run()
  const slotsOut = new Set(
    before.captured.filter((r) => r.startsWith(`campaign:${throttled.body.id}:`)).map((r) => r.split(':')[3]),
  )
  expect([...slotsOut].map(Number).sort((a, b) => a - b)).toEqual([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11])
  const held = [...before.notBefore].filter(([r]) => r.startsWith(`campaign:${throttled.body.id}:`))
  const early = held.filter(([, at]) => at !== undefined)
  expect(early.length).toBeGreaterThan(0)
  for (const [r, at] of early) {
    expect(r).toMatch(new RegExp(`^campaign:${throttled.body.id}:i${act}:11:[AB]$`))
    expect(at).toBe(act + 11 * 60_000)
  }
  expect(
    before.captured.every(
      (r) =>
        !r.startsWith(`campaign:${throttled.body.id}:`) ||
        r.startsWith(`campaign:${throttled.body.id}:i${act}:`),
    ),
  ).toBe(true)
  expect((await api.req('DELETE', `/push/campaigns/${throttled.body.id}`)).status).toBe(204)
  const after = capture(() => Date.now() + 20 * 60_000)
  await after.run()
  expect(after.captured.filter((r) => r.startsWith(`campaign:${throttled.body.id}:`))).toEqual([])
}

export function tickBatch(): RecordBatch {
  const tick = encodeTick(Date.now())
  return {
    topic: 'campaign-ticks',
    partition: 0,
    records: [
      {
        topic: 'campaign-ticks',
        partition: 0,
        offset: '0',
        key: 'tick',
        value: tick.value,
        headers: {},
        timestamp: Date.now(),
      },
    ],
  }
}

async function activatedAt(store: Store, id: number): Promise<number> {
  const rows = await store.query<{ at: string | number }>(
    `SELECT toUnixTimestamp64Milli(activated_at) AS at FROM campaigns FINAL WHERE id = {id:UInt64}`,
    { id },
  )
  return Number(rows[0]?.at)
}
