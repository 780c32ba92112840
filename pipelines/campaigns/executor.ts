import type { PushCampaignBody } from '../../schemas/campaigns.ts'
import type { PushRequestRecord } from '../../schemas/push.ts'
import type { BusRecord, ProduceMessage } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import { compileMembersOfAny } from '../audiences/compile-rules.ts'
import { deadLetter, PermanentError, type Outcome, type StageHandler } from '../failures/outcome.ts'
import { capLookbackMs } from './assign-variant.ts'
import { AudienceGoneError, audienceContext, campaignRules } from './campaign-audience.ts'
import type { CampaignRow } from './campaign-commands.ts'
import { slotRequest } from './campaign-push.ts'
import { CAMPAIGN_COLUMNS, toCampaignRow, type RawCampaignRow } from './campaign-state.ts'
import {
  dueOccurrences,
  OccurrencePlanner,
  SLOT_MS,
  type DueOccurrence,
  type Member,
  type SendRow,
} from './occurrences.ts'

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
  /** Members read per audience page (default 200,000: each page reads the whole app again). */
  pageSize?: number
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

const SEND_CHUNK = 50_000

export function campaignExecutor(deps: ExecutorDeps): StageHandler {
  const now = deps.now ?? Date.now
  const pageSize = deps.pageSize ?? 200_000
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
    const planner = new OccurrencePlanner({ id: campaign.id, appId: campaign.app_id, body }, due, planId)
    let after: string | undefined
    for (;;) {
      const query = compileMembersOfAny(rules, ctx, {
        ...(after !== undefined && { afterInstall: after }),
        limit: pageSize,
      })
      const members = await store.query<Member>(query.sql, query.params)
      if (members.length === 0) break
      const installs = members.map((m) => m.install_uuid)
      const [usual, previous] = await Promise.all([
        due.mode === 'optimized'
          ? usualHours(store, campaign.app_id, installs, began)
          : new Map<string, number>(),
        due.caps && due.caps.length > 0
          ? previousSends(store, campaign.id, due.key, installs, due.start - capLookbackMs(due.caps))
          : new Map<string, number[]>(),
      ])
      const rows = planner.add(members, usual, previous)
      for (let i = 0; i < rows.length; i += SEND_CHUNK)
        await insertSends(store, rows.slice(i, i + SEND_CHUNK))
      if (members.length < pageSize) break
      after = members.at(-1)!.install_uuid
    }
    const t = planner.totals
    const at = now()
    await writeOccurrence({
      ...base,
      state: t.targeted === 0 ? 'done' : 'planned',
      ends_at: planner.endsAt,
      members: t.members,
      held_out: t.heldOut,
      capped: t.capped,
      targeted: t.targeted,
      slots: planner.slotCount,
      updated_at: at,
      version: Math.max(at, base.version + 1),
    })
    deps.onPlanned?.({
      campaignId: campaign.id,
      occurrence: due.key,
      ms: at - began,
      ...t,
      slots: planner.slotCount,
    })
  }

  const dispatch = async (campaign: CampaignRow, body: PushCampaignBody, occ: OccurrenceRow) => {
    const at = now()
    const current = Math.floor((at - occ.starts_at) / SLOT_MS)
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
      return [
        slotRequest({
          appId: campaign.app_id,
          orgId: campaign.org_id,
          campaignId: campaign.id,
          occurrence: occ.occurrence,
          slot: Number(p.slot),
          planId: occ.plan_id,
          creative,
          receivedAt: at,
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
      for (const due of dueOccurrences(row, body, at)) {
        const existing = known.get(due.key)
        if (existing && existing.state !== 'planning') continue
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
    for (const { row, body } of campaigns)
      for (const occ of fresh.get(row.id)?.values() ?? [])
        if (occ.state === 'planned') await dispatch(row, body, occ)
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

const SEND_COLUMNS = [
  'app_id',
  'campaign_id',
  'occurrence',
  'install_uuid',
  'customer_id',
  'variant',
  'creative_id',
  'outcome',
  'due_at',
  'slot',
  'request_id',
  'planned_at',
] as const satisfies readonly (keyof SendRow)[]

/** As JSONCompactEachRow lines: the engine parses them in about half the time of objects. */
async function insertSends(store: Store, rows: readonly SendRow[]): Promise<void> {
  if (rows.length === 0) return
  let text = ''
  for (const r of rows) text += `${JSON.stringify(SEND_COLUMNS.map((c) => r[c]))}\n`
  await store.insert('campaign_sends', Buffer.from(text), { compactColumns: SEND_COLUMNS })
}

/** Each install's usual UTC hour of activity: the hour most of its sessions of 30 days began in (ties: the earlier). */
async function usualHours(
  store: Store,
  appId: string,
  installs: string[],
  now: number,
): Promise<Map<string, number>> {
  const set = stringSet('installs', installs)
  const rows = await store.query<{ install_uuid: string; hour: number | string }>(
    `SELECT install_uuid, argMax(h, (c, -h)) AS hour FROM
     (
       SELECT install_uuid, toHour(started_at) AS h, count() AS c FROM sessions
       WHERE app_id = {app:String} AND install_uuid IN ${set.sql}
         AND started_at >= fromUnixTimestamp64Milli({from:Int64})
       GROUP BY install_uuid, h
     )
     GROUP BY install_uuid`,
    { app: appId, installs: set.value, from: now - 30 * 86_400_000 },
  )
  return new Map(rows.map((r) => [r.install_uuid, Number(r.hour)]))
}

/** When the campaign's earlier occurrences were due for each install (targeted ones): what frequency caps count. */
async function previousSends(
  store: Store,
  campaignId: number,
  occurrence: string,
  installs: string[],
  from: number,
): Promise<Map<string, number[]>> {
  const set = stringSet('installs', installs)
  const rows = await store.query<{ install_uuid: string; times: (number | string)[] }>(
    `SELECT install_uuid, groupArray(due) AS times FROM
     (
       SELECT install_uuid, occurrence, toUnixTimestamp64Milli(max(due_at)) AS due FROM campaign_sends
       WHERE campaign_id = {campaign:UInt64} AND occurrence != {occurrence:String} AND outcome = 'targeted'
         AND install_uuid IN ${set.sql} AND due_at >= fromUnixTimestamp64Milli({from:Int64})
       GROUP BY install_uuid, occurrence
     )
     GROUP BY install_uuid`,
    { campaign: campaignId, occurrence, installs: set.value, from },
  )
  return new Map(rows.map((r) => [r.install_uuid, r.times.map(Number)]))
}
