import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { variantOf } from '../../pipelines/campaigns/assign-variant.ts'
import type { DueOccurrence } from '../../pipelines/campaigns/occurrences.ts'
import { compilePlan, localDueTable, PLAN_TOTALS_SQL } from '../../pipelines/campaigns/plan-sql.ts'
import type { CompiledQuery } from '../../pipelines/audiences/compile-rules.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import type { PushCampaignBody, StoredPushCreative } from '../../schemas/campaigns.ts'
import { tempDir } from '../helpers/temp.ts'

const T = Date.parse('2030-06-01T12:00:00Z')
const DAY = 86_400_000
const creatives: StoredPushCreative[] = [
  { id: 11, letter: 'A', percent: 50, key_values: [], build_attributes: { push_message: 'Hi A' } },
  { id: 12, letter: 'B', percent: 50, key_values: [], build_attributes: { push_message: 'Hi B' } },
]
const body = (control: number): PushCampaignBody => ({
  name: 'n',
  status: 'active',
  goal: 'notify',
  audiences: { campaign_type: 'everyone', control_group_percent: control },
  schedule: { begin_immediately: {} },
  creatives,
})

/**
 * An audience of 200 installs as the audience compiler's members query shapes it: even ones in
 * UTC, odd ones in New York, i3 without a push token.
 */
const MEMBERS: CompiledQuery = {
  sql:
    `SELECT concat('i', toString(number)) AS install_uuid, concat('c-i', toString(number)) AS customer_id, ` +
    `if(number % 2 = 0, 'iOS', 'Android') AS platform, concat('tok-', toString(number)) AS push_token, ` +
    `if(number % 2 = 0, 'UTC', 'America/New_York') AS device_timezone, toUInt8(number != 3) AS has_push ` +
    `FROM numbers({n:UInt64}) SETTINGS join_use_nulls = 0`,
  params: { n: 200 },
}

interface PlanRow {
  install_uuid: string
  variant: string
  creative_id: string
  outcome: string
  due: string
  slot: number
  request_id: string
  platform: string
  push_token: string
}

/** The plan in the engine (plan-sql.ts): the same assignments assign-variant.ts and schedule-time.ts define. */
describe('an occurrence planned by one INSERT … SELECT (embedded engine)', () => {
  let store: ChdbStore
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    const dir = await tempDir('plan-sql')
    cleanup = dir.cleanup
    store = await ChdbStore.open(dir.path)
    await migrate(store)
  })
  afterAll(async () => {
    await store.close()
    await cleanup()
  })

  const plan = async (id: number, control: number, due: DueOccurrence, planId: number) => {
    const statement = compilePlan({
      campaign: { id, appId: 'app', body: body(control) },
      due,
      planId,
      members: MEMBERS,
      local: localDueTable(due, ['UTC', 'America/New_York']),
    })
    await store.command(statement.sql, statement.params)
    const rows = await store.query<PlanRow>(
      `SELECT install_uuid, variant, toString(creative_id) AS creative_id, outcome,
              toString(toUnixTimestamp64Milli(due_at)) AS due, slot, request_id, platform, push_token
       FROM campaign_sends WHERE campaign_id = {id:UInt64} AND planned_at = fromUnixTimestamp64Milli({plan:Int64})
       ORDER BY install_uuid`,
      { id, plan: planId },
    )
    const [totals] = await store.query<Record<string, string | number>>(PLAN_TOTALS_SQL, {
      campaign: id,
      occurrence: due.key,
      plan: planId,
    })
    return { rows: rows.map((r) => ({ ...r, slot: Number(r.slot) })), totals }
  }

  it('assigns every member: the stable variant, control recorded, no-token and capped held back, local time', async () => {
    // i4 had this campaign's push a day ago; the cap allows one a week.
    await store.insert('campaign_sends', [
      {
        app_id: 'app',
        campaign_id: 5,
        occurrence: '2030-05-31',
        install_uuid: 'i4',
        customer_id: 'c-i4',
        variant: 'A',
        creative_id: 11,
        outcome: 'targeted',
        due_at: T - DAY,
        slot: 0,
        request_id: 'campaign:5:2030-05-31:0:A',
        planned_at: T - DAY,
      },
    ])
    const due: DueOccurrence = {
      key: '2030-06-01',
      start: T,
      mode: 'local',
      wallClock: { year: 2030, month: 6, day: 1, hour: 12, minute: 0, second: 0, millisecond: 0 },
      perMinute: 0,
      caps: [{ name: 'messages_per_days', days: 7, count: 1 }],
    }
    const { rows, totals } = await plan(5, 30, due, 777)
    expect(rows).toHaveLength(200)
    const variantOfI4 = variantOf(5, 'i4', 30, creatives)
    for (const r of rows) {
      const v = variantOf(5, r.install_uuid, 30, creatives)
      const outcome =
        v === 'control'
          ? 'control'
          : r.install_uuid === 'i3'
            ? 'no_token'
            : r.install_uuid === 'i4'
              ? 'capped'
              : 'targeted'
      expect([r.install_uuid, r.variant, r.outcome]).toEqual([r.install_uuid, v, outcome])
      expect(r.creative_id).toBe(v === 'A' ? '11' : v === 'B' ? '12' : '0')
      // 12:00 in New York is 16:00 UTC, four hours after the start; UTC devices at the start.
      const ny = Number(r.install_uuid.slice(1)) % 2 === 1
      expect(Number(r.due)).toBe(ny ? T + 4 * 3_600_000 : T)
      if (r.outcome !== 'targeted') {
        expect([r.slot, r.request_id, r.push_token]).toEqual([0, '', ''])
        continue
      }
      expect(r.slot).toBe(ny ? 240 : 0)
      expect(r.request_id).toBe(`campaign:5:2030-06-01:${r.slot}:${r.variant}`)
      expect([r.platform, r.push_token]).toEqual([ny ? 'Android' : 'iOS', `tok-${r.install_uuid.slice(1)}`])
    }
    expect(variantOfI4 === 'control' || rows.find((r) => r.install_uuid === 'i4')?.outcome === 'capped').toBe(
      true,
    )
    const held = rows.filter((r) => r.outcome === 'control').length
    expect(held).toBeGreaterThan(40)
    expect(totals).toMatchObject({
      members: 200,
      held_out: held,
      targeted: rows.filter((r) => r.outcome === 'targeted').length,
      last_slot: 240,
    })
  })

  it('throttles: at most perMinute a slot, none before it is due, every slot filled in turn', async () => {
    const absolute = await plan(
      6,
      0,
      { key: 'once', start: T, mode: 'absolute', perMinute: 7, caps: undefined },
      1,
    )
    const targeted = absolute.rows.filter((r) => r.outcome === 'targeted')
    expect(targeted).toHaveLength(199)
    // All due at the start: slots 0, 1, 2, … of 7 each, in install order.
    const inOrder = [...targeted].sort((a, b) => a.install_uuid.localeCompare(b.install_uuid))
    inOrder.forEach((r, k) => expect(r.slot).toBe(Math.floor(k / 7)))

    const local = await plan(
      7,
      0,
      {
        key: 'once',
        start: T,
        mode: 'local',
        wallClock: { year: 2030, month: 6, day: 1, hour: 12, minute: 0, second: 0, millisecond: 0 },
        perMinute: 30,
        caps: undefined,
      },
      2,
    )
    const bySlot = new Map<number, number>()
    for (const r of local.rows.filter((x) => x.outcome === 'targeted')) {
      const dueSlot = Math.ceil((Number(r.due) - T) / 60_000)
      expect(r.slot).toBeGreaterThanOrEqual(dueSlot)
      bySlot.set(r.slot, (bySlot.get(r.slot) ?? 0) + 1)
    }
    // 100 UTC devices from slot 0 (30, 30, 30, 10), 99 New York devices from slot 240 (30, 30, 30, 9).
    expect([...bySlot].sort((a, b) => a[0] - b[0])).toEqual([
      [0, 30],
      [1, 30],
      [2, 30],
      [3, 10],
      [240, 30],
      [241, 30],
      [242, 30],
      [243, 9],
    ])
  })
})
