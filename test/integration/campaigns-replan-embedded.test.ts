import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { variantOf } from '../../pipelines/campaigns/assign-variant.ts'
import { parseSlotTarget } from '../../pipelines/campaigns/campaign-push.ts'
import { campaignExecutor } from '../../pipelines/campaigns/executor.ts'
import { encodePushRequest, type PushRequestRecord } from '../../schemas/push.ts'
import { postSdk, sdkReceiptDone, sessionRow } from '../helpers/ingestion-scenario.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { campaignClient } from './campaigns-scenario.ts'
import { tickBatch } from './campaigns-execution-scenario.ts'

/**
 * A plan cut short (the worker dies after writing the plan, before recording it) is redone under a new plan
 * id on the next tick; only the finished plan is dispatched, so every member gets exactly one push
 * and the rows of the unfinished plan are never read (docs/campaigns.md, "Execution").
 *
 * The campaign is scheduled an hour ahead, so the running Sluice's own executor (real clock) leaves
 * it alone, and the test's executors see a clock an hour on.
 */
const HOUR = 3_600_000
const INSTALLS = 25

/**
 * The store of a worker that dies right after the engine wrote its plan (the INSERT … SELECT into
 * campaign_sends), before the occurrence is recorded planned: the plan's rows are all there, and
 * must never be read.
 */
function dyingStore(store: Store): Store {
  return new Proxy(store, {
    get(target, prop, receiver) {
      if (prop === 'command')
        return async (sql: string, params?: Parameters<Store['command']>[1]) => {
          await target.command(sql, params)
          if (sql.startsWith('INSERT INTO campaign_sends')) throw new Error('the worker was killed')
        }
      const value = Reflect.get(target, prop, receiver) as unknown
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
    },
  })
}

describe('a campaign plan cut short, embedded mode', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess({ SLUICE_CAMPAIGN_TICK_MS: '500' })
  })
  afterAll(() => sluice.close())

  it(
    'is planned again under a new id, and each member is sent exactly one push',
    { timeout: 180_000 },
    async () => {
      const store = sluice.running.runtime.store
      const appId = 'replan-app'
      const tenant = await sluice.tenant('replan', [appId])
      const api = campaignClient(sluice, tenant.auth, tenant.orgId, appId)
      const installs = Array.from({ length: INSTALLS }, (_, i) => `rp-${String(i).padStart(2, '0')}`)
      const at = Date.now() - 120_000
      await sdkReceiptDone(
        sluice,
        appId,
        await postSdk(
          sluice,
          appId,
          installs.map((install) =>
            sessionRow({ install, customer: `c-${install}`, at, country: 'fr', model: 'm' }),
          ),
        ),
      )

      const begin = Date.now() + HOUR
      const created = await api.req('POST', '/push/campaigns', {
        name: 'Replan',
        status: 'active',
        goal: 'monetize',
        conversion_event: { event_name: 'Purchase' },
        audiences: { campaign_type: 'everyone', control_group_percent: 20 },
        schedule: { on_schedule: { begin_date: new Date(begin).toISOString() } },
        creatives: [
          { title: 'A', percent: 50, build_attributes: { push_message: 'Version A' } },
          { title: 'B', percent: 50, build_attributes: { push_message: 'Version B' } },
        ],
      })
      expect(created.status).toBe(201)
      const id = created.body.id
      const occurrences = () =>
        store.query<{ state: string; plan_id: string; targeted: string; members: string }>(
          `SELECT state, toString(plan_id) AS plan_id, toString(targeted) AS targeted, toString(members) AS members
         FROM campaign_occurrences FINAL WHERE campaign_id = {id:UInt64}`,
          { id },
        )
      const sendsOf = (plan: string) =>
        store.query<{ install_uuid: string; variant: string; outcome: string }>(
          `SELECT install_uuid, variant, outcome FROM campaign_sends
         WHERE campaign_id = {id:UInt64} AND planned_at = fromUnixTimestamp64Milli({plan:Int64}) ORDER BY install_uuid`,
          { id, plan },
        )

      // 30 s before the start: not yet due for an executor planning 15 s ahead…
      const early = campaignExecutor({
        store,
        now: () => begin - 30_000,
        planAheadMs: 15_000,
        produce: async () => undefined,
      })
      await early(tickBatch())
      expect(await occurrences()).toEqual([])

      // …due for one planning 45 s ahead: the first worker writes its plan, then dies before
      // recording it.
      const failures: unknown[] = []
      const dispatchedByFirst: PushRequestRecord[] = []
      const first = campaignExecutor({
        store: dyingStore(store),
        now: () => begin - 30_000,
        planAheadMs: 45_000,
        produce: async (records) => void dispatchedByFirst.push(...records),
        onFailed: (info) => void failures.push(info.error),
      })
      await first(tickBatch())
      expect(failures.map((e) => (e as Error).message)).toEqual(['the worker was killed'])
      expect(dispatchedByFirst).toEqual([])
      const [cut] = await occurrences()
      expect(cut).toMatchObject({ state: 'planning', targeted: '0' })
      expect(await sendsOf(cut!.plan_id)).toHaveLength(INSTALLS)

      // The next tick (this worker restarted, or another one) plans it again and dispatches it.
      const dispatched: PushRequestRecord[] = []
      const second = campaignExecutor({
        store,
        now: () => Date.now() + HOUR + 2000,
        produce: async (records) => {
          dispatched.push(...records)
          await sluice.running.runtime.bus.produce(
            sluice.running.runtime.topology.topics.pushRequests.topic,
            records.map(encodePushRequest),
          )
        },
      })
      await second(tickBatch())
      const [done] = await occurrences()
      expect(done!.plan_id).not.toBe(cut!.plan_id)
      expect(done).toMatchObject({ state: 'done', members: String(INSTALLS) })

      const expected = new Map(
        installs.map((i) => [
          i,
          variantOf(id, i, 20, [
            { letter: 'A', percent: 50 },
            { letter: 'B', percent: 50 },
          ]),
        ]),
      )
      const targeted = installs.filter((i) => expected.get(i) !== 'control')
      expect(Number(done!.targeted)).toBe(targeted.length)
      // The new plan holds every member once, with the same (stable) variant as the cut plan gave.
      const plan = await sendsOf(done!.plan_id)
      expect(plan.map((s) => s.install_uuid)).toEqual(installs)
      for (const s of plan) expect(s.variant).toBe(expected.get(s.install_uuid))
      // Only the finished plan is dispatched.
      expect(dispatched.length).toBeGreaterThan(0)
      for (const r of dispatched)
        expect(parseSlotTarget(r.messages[0]?.target)?.planId).toBe(Number(done!.plan_id))

      // The push pipeline sends each targeted member exactly one push, none to the control group.
      const deliveries = await waitFor(
        () =>
          store.query<{ install_uuid: string; n: string; creative: string }>(
            `SELECT install_uuid, toString(count()) AS n, any(creative) AS creative FROM push_deliveries
           WHERE app_id = {app:String} AND campaign_id = {id:UInt64} GROUP BY install_uuid ORDER BY install_uuid`,
            { app: appId, id },
          ),
        (rows) => rows.length >= targeted.length,
        { what: `${targeted.length} deliveries`, timeoutMs: 60_000 },
      )
      expect(deliveries.map((d) => d.install_uuid)).toEqual(targeted)
      expect(deliveries.every((d) => d.n === '1' && d.creative === expected.get(d.install_uuid))).toBe(true)
    },
  )
})
