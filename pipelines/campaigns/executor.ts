import type { PushCampaignBody } from '../../schemas/campaigns.ts'
import type { PushRequestRecord } from '../../schemas/push.ts'
import type { BusRecord, ProduceMessage } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { compileMembersOfAny } from '../audiences/compile-rules.ts'
import { deadLetter, PermanentError, type Outcome, type StageHandler } from '../failures/outcome.ts'
import { AudienceGoneError, audienceContext, campaignRules } from './campaign-audience.ts'
import type { CampaignRow } from './campaign-commands.ts'
import { slotRequest } from './campaign-push.ts'
import { compilePlan, localDueTable, PLAN_TOTALS_SQL } from './plan-sql.ts'
import { CAMPAIGN_COLUMNS, toCampaignRow, type RawCampaignRow } from './campaign-state.ts'
import { dueOccurrences, PLAN_AHEAD_MS, SLOT_MS, type DueOccurrence } from './occurrences.ts'

/**
 * Campaign execution (docs/campaigns.md, "Execution"): on each tick (the campaign-tick job puts
 * one on the campaign-ticks topic every SLUICE_CAMPAIGN_TICK_MS; one consumer owns the topic's
 * one partition), for every active push campaign:
 *
 * 1. plan each occurrence that is due and not yet planned: the audience is evaluated now (the
 *    audience compiler, page by page), every member gets its variant, outcome, due time and
 *    dispatch slot, all recorded in campaign_sends under a new plan id, then the occurrence is
 *    recorded `planned` with that plan id. A plan cut short (a crash) is redone under a new id;
 *    rows of an unfinished plan are never read.
 * 2. dispatch the slots whose time has come: one push request per (slot, creative) onto the
 *    push-requests topic with a deterministic request id; then record how far it got. A slot
 *    dispatched twice (a crash before the record, two executors during a hand-over) is the same
 *    request id, which the push pipeline plans once; its planner sends each install once.
 * An occurrence whose campaign is no longer active (draft, archived, deleted) dispatches nothing.
 */

export interface ExecutorDeps {
  store: Store
  /** Produce push request records durably onto the push-requests topic. */
  produce: (records: PushRequestRecord[]) => Promise<void>
  now?: () => number
  /**
   * An occurrence planned ahead whose handover (its start less dispatchAheadMs) comes within this
   * many ms (plus dispatchAheadMs) of a pass is waited for and its first slot handed over then, not
   * at the next tick (the tick interval: a handover is then not a tick late). 0: at the next tick.
   */
  startOnTimeWithinMs?: number
  /**
   * Slots are handed over this many ms before their moment, marked not to be sent before it
   * (DISPATCH_AHEAD_MS; 0: at the moment).
   */
  dispatchAheadMs?: number
  /** How long before its start an occurrence is planned (PLAN_AHEAD_MS by default). */
  planAheadMs?: number
  onPlanned?: (info: { campaignId: number; occurrence: string; ms: number } & PlanCounts) => void
  onFailed?: (info: { campaignId: number; occurrence: string; error: unknown }) => void
}

interface PlanCounts {
  members: number
  heldOut: number
  capped: number
  targeted: number
  slots: number
}

export const TICK_VERSION = 1
export const encodeTick = (at: number): ProduceMessage => ({
  key: 'tick',
  value: Buffer.from(JSON.stringify({ v: TICK_VERSION, at })),
})

function decodeTick(record: Pick<BusRecord, 'value'>): boolean {
  try {
    const v = JSON.parse(record.value.toString('utf8')) as { v?: unknown; at?: unknown }
    return v.v === TICK_VERSION && typeof v.at === 'number'
  } catch {
    return false
  }
}

/** A row of campaign_occurrences, as read (times in ms). */
export interface OccurrenceRow {
  campaign_id: number
  occurrence: string
  app_id: string
  state: 'planning' | 'planned' | 'done' | 'failed'
  starts_at: number
  ends_at: number
  members: number
  held_out: number
  capped: number
  targeted: number
  plan_id: number
  slots: number
  dispatched: number
  error: string
  updated_at: number
  version: number
}

export function campaignExecutor(deps: ExecutorDeps): StageHandler {
  const now = deps.now ?? Date.now
  const ahead = Math.max(0, deps.dispatchAheadMs ?? 0)
  const planAhead = deps.planAheadMs ?? PLAN_AHEAD_MS
  const { store } = deps

  const writeOccurrence = (row: OccurrenceRow) => store.insert('campaign_occurrences', [row])

  const plan = async (campaign: CampaignRow, body: PushCampaignBody, due: DueOccurrence) => {
    const began = now()
    // A new plan id even when an earlier attempt used this ms: ids order the attempts.
    const planId = began
    const base: OccurrenceRow = {
      campaign_id: campaign.id,
      occurrence: due.key,
      app_id: campaign.app_id,
      state: 'planning',
      starts_at: due.start,
      ends_at: due.start,
      members: 0,
      held_out: 0,
      capped: 0,
      targeted: 0,
      plan_id: planId,
      slots: 0,
      dispatched: 0,
      error: '',
      updated_at: began,
      version: began,
    }
    await writeOccurrence(base)
    const ctx = await audienceContext(store, campaign.app_id, began)
    let rules
    try {
      if (!ctx) throw new AudienceGoneError(0)
      rules = await campaignRules(store, { orgId: campaign.org_id, appId: campaign.app_id }, body.audiences)
    } catch (err) {
      if (!(err instanceof AudienceGoneError)) throw err
      const error = ctx ? err.message : `app ${campaign.app_id} no longer exists`
      await writeOccurrence({ ...base, state: 'failed', error, updated_at: now(), version: now() })
      deps.onFailed?.({ campaignId: campaign.id, occurrence: due.key, error })
      return
    }
    // The whole plan in the engine: one INSERT … SELECT under this plan id (plan-sql.ts).
    const local =
      due.mode === 'local' ? localDueTable(due, await deviceZones(store, campaign.app_id)) : undefined
    const statement = compilePlan({
      campaign: { id: campaign.id, appId: campaign.app_id, body },
      due,
      planId,
      members: compileMembersOfAny(rules, ctx),
      ...(local && { local }),
      sessionsFrom: began - 30 * 86_400_000,
    })
    await store.command(statement.sql, statement.params)
    const [totals] = await store.query<
      Record<'members' | 'held_out' | 'capped' | 'targeted' | 'last_slot', string | number>
    >(PLAN_TOTALS_SQL, { campaign: campaign.id, occurrence: due.key, plan: planId })
    const t = {
      members: Number(totals?.members ?? 0),
      heldOut: Number(totals?.held_out ?? 0),
      capped: Number(totals?.capped ?? 0),
      targeted: Number(totals?.targeted ?? 0),
    }
    const slots = t.targeted > 0 ? Number(totals?.last_slot ?? 0) + 1 : 0
    const at = now()
    await writeOccurrence({
      ...base,
      state: t.targeted === 0 ? 'done' : 'planned',
      ends_at: due.start + Math.max(0, slots - 1) * SLOT_MS,
      members: t.members,
      held_out: t.heldOut,
      capped: t.capped,
      targeted: t.targeted,
      slots,
      updated_at: at,
      version: Math.max(at, base.version + 1),
    })
    deps.onPlanned?.({ campaignId: campaign.id, occurrence: due.key, ms: at - began, ...t, slots })
  }

  const dispatch = async (campaign: CampaignRow, body: PushCampaignBody, occ: OccurrenceRow) => {
    // Planned ahead, then edited before anything went out: planned again when due, never sent as was.
    if (supersededPlan(campaign, occ)) return
    const at = now()
    // Slots whose moment comes within `ahead` go now, each held by the sender until its moment.
    const current = Math.floor((at + ahead - occ.starts_at) / SLOT_MS)
    if (current < occ.dispatched) return
    const last = Math.min(current, occ.slots - 1)
    const pending = await store.query<{ slot: number | string; variant: string }>(
      `SELECT DISTINCT slot, variant FROM campaign_sends
       WHERE campaign_id = {campaign:UInt64} AND occurrence = {occurrence:String}
         AND planned_at = fromUnixTimestamp64Milli({plan:Int64}) AND outcome = 'targeted'
         AND slot >= {from:UInt32} AND slot <= {to:UInt32}
       ORDER BY slot, variant`,
      {
        campaign: campaign.id,
        occurrence: occ.occurrence,
        plan: occ.plan_id,
        from: occ.dispatched,
        to: last,
      },
    )
    const creatives = new Map(body.creatives.map((c) => [c.letter, c]))
    const records = pending.flatMap((p) => {
      const creative = creatives.get(p.variant)
      if (!creative) return []
      const slot = Number(p.slot)
      const due = occ.starts_at + slot * SLOT_MS
      return [
        slotRequest({
          appId: campaign.app_id,
          orgId: campaign.org_id,
          campaignId: campaign.id,
          occurrence: occ.occurrence,
          slot,
          planId: occ.plan_id,
          creative,
          receivedAt: at,
          ...(due > at && { notBefore: due }),
        }),
      ]
    })
    if (records.length > 0) await deps.produce(records)
    const dispatched = last + 1
    await writeOccurrence({
      ...occ,
      dispatched,
      state: dispatched >= occ.slots ? 'done' : 'planned',
      updated_at: at,
      version: Math.max(at, occ.version + 1),
    })
  }

  const pass = async () => {
    const at = now()
    const campaigns = await readRunnable(store)
    const occurrences = await readOccurrences(
      store,
      campaigns.map((c) => c.row.id),
    )
    for (const { row, body } of campaigns) {
      const known = occurrences.get(row.id) ?? new Map<string, OccurrenceRow>()
      for (const due of dueOccurrences(row, body, at, planAhead)) {
        const existing = known.get(due.key)
        if (existing && existing.state !== 'planning' && !supersededPlan(row, existing)) continue
        try {
          await plan(row, body, due)
        } catch (err) {
          // Left `planning`: the next tick plans it again (a store hiccup); other campaigns go on.
          deps.onFailed?.({ campaignId: row.id, occurrence: due.key, error: err })
        }
      }
    }
    // Read again: what was just planned may have slots due now.
    const fresh = await readOccurrences(
      store,
      campaigns.map((c) => c.row.id),
    )
    const soon: { row: CampaignRow; body: PushCampaignBody; occ: OccurrenceRow }[] = []
    // A pass may start late (a long pass before it, a loaded machine): waiting for handovers
    // up to `ahead` beyond the next tick keeps one late pass from making a handover late.
    const within = (deps.startOnTimeWithinMs ?? 0) + (deps.startOnTimeWithinMs ? ahead : 0)
    for (const { row, body } of campaigns)
      for (const occ of fresh.get(row.id)?.values() ?? []) {
        if (occ.state !== 'planned') continue
        await dispatch(row, body, occ)
        const wait = occ.starts_at - ahead - now()
        if (occ.dispatched === 0 && wait > 0 && wait <= within && !supersededPlan(row, occ))
          soon.push({ row, body, occ })
      }
    // Planned ahead and starting before the next tick: dispatched `ahead` of the start itself.
    soon.sort((a, b) => a.occ.starts_at - b.occ.starts_at)
    for (const { row, body, occ } of soon) {
      const wait = occ.starts_at - ahead - now()
      if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait))
      await dispatch(row, body, occ)
    }
  }

  return async (batch) => {
    const outcomes: { record: BusRecord; outcome: Outcome }[] = []
    let ticks = 0
    for (const record of batch.records) {
      if (decodeTick(record)) ticks++
      else outcomes.push({ record, outcome: deadLetter(new PermanentError('not a campaign tick')) })
    }
    // Any number of ticks in a batch is one pass: a pass looks at the state, not at the ticks.
    if (ticks > 0) await pass()
    return { outcomes }
  }
}

/**
 * A plan made before the campaign's last edit, of which nothing was dispatched yet (it was
 * planned ahead of its start, planAheadMs): the edit may change its audience, creatives or
 * start, so it is planned again instead of sent.
 */
function supersededPlan(campaign: CampaignRow, occ: OccurrenceRow): boolean {
  return occ.state === 'planned' && occ.dispatched === 0 && campaign.updated_at > occ.plan_id
}

/** Active push campaigns that are neither archived nor deleted. */
async function readRunnable(store: Store): Promise<{ row: CampaignRow; body: PushCampaignBody }[]> {
  const rows = await store.query<RawCampaignRow>(
    `SELECT ${CAMPAIGN_COLUMNS} FROM campaigns FINAL
     WHERE channel = 'push' AND status = 'active' AND archived = 0 AND deleted = 0`,
  )
  return rows.map((r) => {
    const row = toCampaignRow(r)
    return { row, body: JSON.parse(row.body) as PushCampaignBody }
  })
}

async function readOccurrences(
  store: Store,
  ids: readonly number[],
): Promise<Map<number, Map<string, OccurrenceRow>>> {
  const out = new Map<number, Map<string, OccurrenceRow>>()
  if (ids.length === 0) return out
  const rows = await store.query<Record<keyof OccurrenceRow, string | number>>(
    `SELECT campaign_id, occurrence, app_id, state, toUnixTimestamp64Milli(starts_at) AS starts_at,
            toUnixTimestamp64Milli(ends_at) AS ends_at, members, held_out, capped, targeted, plan_id, slots,
            dispatched, error, toUnixTimestamp64Milli(updated_at) AS updated_at, version
     FROM campaign_occurrences FINAL
     WHERE campaign_id IN {ids:Array(UInt64)} AND state IN ('planning', 'planned')`,
    { ids },
  )
  for (const r of rows) {
    const row: OccurrenceRow = {
      campaign_id: Number(r.campaign_id),
      occurrence: String(r.occurrence),
      app_id: String(r.app_id),
      state: r.state as OccurrenceRow['state'],
      starts_at: Number(r.starts_at),
      ends_at: Number(r.ends_at),
      members: Number(r.members),
      held_out: Number(r.held_out),
      capped: Number(r.capped),
      targeted: Number(r.targeted),
      plan_id: Number(r.plan_id),
      slots: Number(r.slots),
      dispatched: Number(r.dispatched),
      error: String(r.error),
      updated_at: Number(r.updated_at),
      version: Number(r.version),
    }
    const byKey = out.get(row.campaign_id) ?? new Map<string, OccurrenceRow>()
    byKey.set(row.occurrence, row)
    out.set(row.campaign_id, byKey)
  }
  // Finished occurrences matter too: a due occurrence already done or failed is never planned again.
  const finished = await store.query<{ campaign_id: string | number; occurrence: string; state: string }>(
    `SELECT campaign_id, occurrence, argMax(state, version) AS state FROM campaign_occurrences
     WHERE campaign_id IN {ids:Array(UInt64)} GROUP BY campaign_id, occurrence HAVING state IN ('done', 'failed')`,
    { ids },
  )
  for (const f of finished) {
    const id = Number(f.campaign_id)
    const byKey = out.get(id) ?? new Map<string, OccurrenceRow>()
    if (!byKey.has(f.occurrence))
      byKey.set(f.occurrence, { occurrence: f.occurrence, campaign_id: id, state: f.state } as OccurrenceRow)
    out.set(id, byKey)
  }
  return out
}

/** The time zones the app's devices report (the local-time table's rows). */
async function deviceZones(store: Store, appId: string): Promise<string[]> {
  const rows = await store.query<{ tz: string }>(
    `SELECT DISTINCT device_timezone AS tz FROM devices WHERE app_id = {app:String} AND device_timezone != ''`,
    { app: appId },
  )
  return rows.map((r) => r.tz)
}
