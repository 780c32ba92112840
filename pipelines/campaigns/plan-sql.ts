import type { PushCampaignBody } from '../../schemas/campaigns.ts'
import type { CompiledQuery } from '../audiences/compile-rules.ts'
import { capLookbackMs, CONTROL } from './assign-variant.ts'
import { SLOT_MS, type DueOccurrence } from './occurrences.ts'
import { deviceZone, localDeliveryTime } from './schedule-time.ts'

/**
 * An occurrence's plan as one `INSERT … SELECT` (pure: campaign, occurrence and audience query
 * in, SQL and parameters out; values only as {name:Type} parameters). The engine evaluates the
 * audience and computes for every member (test/integration/campaign-plan-sql.test.ts checks it
 * against assign-variant.ts and schedule-time.ts):
 *
 * - the variant: SHA-256 of "<campaign>:<install>", bytes 0–3 (big-endian) against the control
 *   share, bytes 4–7 against the creatives' cumulative percents: the same hash and the same
 *   float64 arithmetic as assign-variant.ts, so both give every install the same variant;
 * - the due time: the start; each device zone's wall-clock time (a table of the app's zones,
 *   computed here: the engine's time zone functions take a constant zone); the usual hour;
 * - the outcome: control, no_token, capped (frequency caps over the campaign's earlier pushes),
 *   targeted;
 * - the dispatch slot: one-minute slots from the start; throttled, the targeted members fill
 *   them in (due slot, install) order, at most `perMinute` a slot, none before its due slot.
 *   Filling seat p_k = max(p_{k-1} + 1, base_k · perMinute) in that order is
 *   p_k = k + max_{j ≤ k}(base_j · perMinute − j): a running maximum, one window function;
 * - the push token and platform the sender will use, so a slot's pages are one range read.
 */

export const PLAN_COLUMNS = [
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
  'platform',
  'push_token',
] as const

/** Each zone's due time of a local-time occurrence (ms), for the zones the app's devices report. */
export function localDueTable(
  due: DueOccurrence,
  zones: readonly string[],
): { zones: string[]; dues: number[] } {
  const out = { zones: [] as string[], dues: [] as number[] }
  if (due.mode !== 'local' || !due.wallClock) return out
  for (const z of zones) {
    const at = localDeliveryTime(due.wallClock, due.start, deviceZone(z))
    if (at === due.start) continue
    out.zones.push(z)
    out.dues.push(at)
  }
  return out
}

/** The compiled audience query without its SETTINGS clause (which must stay the outermost query's). */
function splitSettings(members: CompiledQuery): { inner: string; settings: string } {
  const at = members.sql.lastIndexOf(' SETTINGS ')
  return at >= 0
    ? { inner: members.sql.slice(0, at), settings: members.sql.slice(at) }
    : { inner: members.sql, settings: '' }
}

export function compilePlan(o: {
  campaign: { id: number; appId: string; body: PushCampaignBody }
  due: DueOccurrence
  planId: number
  members: CompiledQuery
  /** localDueTable's result for a local-time occurrence. */
  local?: { zones: string[]; dues: number[] }
  /** When the usual hours are counted from (optimized mode): 30 days before planning. */
  sessionsFrom?: number
}): CompiledQuery {
  const { campaign, due, planId } = o
  const { body } = campaign
  const { inner, settings } = splitSettings(o.members)
  const params: Record<string, unknown> = {
    ...o.members.params,
    plan_app: campaign.appId,
    plan_campaign: campaign.id,
    plan_hash_prefix: `${campaign.id}:`,
    plan_occurrence: due.key,
    plan_request_prefix: `campaign:${campaign.id}:${due.key}:`,
    plan_id: planId,
    plan_start: due.start,
    plan_control: body.audiences.control_group_percent / 100,
    plan_letters: body.creatives.map((c) => c.letter),
    plan_creative_ids: body.creatives.map((c) => c.id),
  }

  // Creatives by cumulative percent of the draw; the last one takes what rounding leaves.
  let cumulative = 0
  const branches: string[] = [`c < {plan_control:Float64}`, `'${CONTROL}'`]
  body.creatives.forEach((c, i) => {
    cumulative += c.percent
    if (i === body.creatives.length - 1) return
    params[`plan_cum${i}`] = cumulative
    params[`plan_letter${i}`] = c.letter
    branches.push(`draw < {plan_cum${i}:Float64}`, `{plan_letter${i}:String}`)
  })
  params.plan_last_letter = body.creatives.at(-1)?.letter ?? CONTROL
  branches.push('{plan_last_letter:String}')

  let dueSql = '{plan_start:Int64}'
  const joins: string[] = []
  if (due.mode === 'local' && o.local && o.local.zones.length > 0) {
    params.plan_zones = o.local.zones
    params.plan_zone_dues = o.local.dues
    dueSql = `transform(m.device_timezone, {plan_zones:Array(String)}, {plan_zone_dues:Array(Int64)}, {plan_start:Int64})`
  } else if (due.mode === 'optimized') {
    // optimizedDeliveryTime: the first whole hour at or after the start whose UTC hour is the usual one.
    const hourStart = Math.ceil(due.start / 3_600_000) * 3_600_000
    params.plan_hour_start = hourStart
    params.plan_hour_of_start = new Date(hourStart).getUTCHours()
    params.plan_sessions_from = o.sessionsFrom ?? due.start - 30 * 86_400_000
    joins.push(
      `LEFT JOIN (SELECT install_uuid, argMax(h, (n, -h)) AS hour, toUInt8(1) AS known FROM
         (SELECT install_uuid, toHour(started_at) AS h, count() AS n FROM sessions
          WHERE app_id = {plan_app:String} AND started_at >= fromUnixTimestamp64Milli({plan_sessions_from:Int64})
          GROUP BY install_uuid, h)
       GROUP BY install_uuid) AS u ON u.install_uuid = m.install_uuid`,
    )
    dueSql =
      `if(u.known = 1, {plan_hour_start:Int64} + ` +
      `toInt64((toInt64(u.hour) - {plan_hour_of_start:Int64} + 24) % 24) * 3600000, {plan_start:Int64})`
  }

  // Frequency caps: the campaign's earlier targeted occurrences per install (their due times).
  let capped = '0'
  if (due.caps && due.caps.length > 0) {
    params.plan_prev_from = due.start - capLookbackMs(due.caps)
    joins.push(
      `LEFT JOIN (SELECT install_uuid, groupArray(t) AS prev FROM
         (SELECT install_uuid, occurrence, toUnixTimestamp64Milli(max(due_at)) AS t FROM campaign_sends
          WHERE campaign_id = {plan_campaign:UInt64} AND occurrence != {plan_occurrence:String}
            AND outcome = 'targeted' AND due_at >= fromUnixTimestamp64Milli({plan_prev_from:Int64})
          GROUP BY install_uuid, occurrence)
       GROUP BY install_uuid) AS p ON p.install_uuid = m.install_uuid`,
    )
    const tests = due.caps.map((cap, i) => {
      params[`plan_cap_days${i}`] = cap.days * 86_400_000
      params[`plan_cap_count${i}`] = cap.count
      const apart = cap.messages_atleast_days_apart ?? 0
      const within = `length(arrayFilter(t -> t > due - {plan_cap_days${i}:Int64} AND t <= due, p.prev)) + 1 > {plan_cap_count${i}:UInt32}`
      if (apart <= 0) return within
      params[`plan_cap_apart${i}`] = apart * 86_400_000
      return `${within} OR arrayExists(t -> t > due - {plan_cap_apart${i}:Int64} AND t <= due, p.prev)`
    })
    capped = tests.map((t) => `(${t})`).join(' OR ')
  }

  const assigned =
    `SELECT m.install_uuid AS install_uuid, m.customer_id AS customer_id, toString(m.platform) AS platform, ` +
    `m.push_token AS push_token, variant, ${dueSql} AS due, ` +
    `multiIf(variant = '${CONTROL}', 'control', m.has_push != 1, 'no_token', ${capped}, 'capped', 'targeted') AS outcome, ` +
    `if(due <= {plan_start:Int64}, 0, intDiv(due - {plan_start:Int64} + ${SLOT_MS - 1}, ${SLOT_MS})) AS base ` +
    `FROM (SELECT *, SHA256(concat({plan_hash_prefix:String}, install_uuid)) AS hash, ` +
    `toFloat64(reinterpretAsUInt32(reverse(substring(hash, 1, 4)))) / 4294967296 AS c, ` +
    `toFloat64(reinterpretAsUInt32(reverse(substring(hash, 5, 4)))) / 4294967296 * 100 AS draw, ` +
    `multiIf(${branches.join(', ')}) AS variant FROM (${inner})) AS m ` +
    joins.join(' ')

  const perMinute = due.perMinute
  let slotted: string
  if (perMinute > 0) {
    params.plan_per_minute = perMinute
    const w = `PARTITION BY outcome = 'targeted' ORDER BY base, install_uuid`
    slotted =
      `SELECT *, if(outcome = 'targeted', toUInt32(intDiv(k + maxSeat, {plan_per_minute:Int64})), 0) AS slot FROM ` +
      `(SELECT *, max(toInt64(base) * {plan_per_minute:Int64} - k) OVER (${w} ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS maxSeat FROM ` +
      `(SELECT *, toInt64(row_number() OVER (${w})) - 1 AS k FROM (${assigned})))`
  } else {
    slotted = `SELECT *, if(outcome = 'targeted', toUInt32(base), 0) AS slot FROM (${assigned})`
  }

  const sql =
    `INSERT INTO campaign_sends (${PLAN_COLUMNS.join(', ')}) ` +
    `SELECT {plan_app:String}, {plan_campaign:UInt64}, {plan_occurrence:String}, install_uuid, customer_id, variant, ` +
    `transform(variant, {plan_letters:Array(String)}, {plan_creative_ids:Array(UInt64)}, toUInt64(0)), outcome, ` +
    `fromUnixTimestamp64Milli(due, 'UTC'), slot, ` +
    `if(outcome = 'targeted', concat({plan_request_prefix:String}, toString(slot), ':', variant), ''), ` +
    `fromUnixTimestamp64Milli({plan_id:Int64}, 'UTC'), platform, if(outcome = 'targeted', push_token, '') ` +
    `FROM (${slotted})${settings}`
  return { sql, params }
}

/** The plan's totals, read back from what the INSERT wrote (one range of the table's key). */
export const PLAN_TOTALS_SQL = `SELECT count() AS members, countIf(outcome = 'control') AS held_out,
    countIf(outcome = 'capped') AS capped, countIf(outcome = 'targeted') AS targeted,
    maxIf(slot, outcome = 'targeted') AS last_slot
  FROM campaign_sends
  WHERE campaign_id = {campaign:UInt64} AND occurrence = {occurrence:String}
    AND planned_at = fromUnixTimestamp64Milli({plan:Int64})`
