import type { PushCampaignBody, StoredFrequency } from '../../schemas/campaigns.ts'
import type { CampaignRow } from './campaign-commands.ts'
import { immediateKey, ONCE, ONE_TIME_GRACE_MS } from './campaign-list.ts'
import {
  atWallClock,
  localStartZone,
  parseInstant,
  recurringOccurrences,
  wallClockOf,
  type WallClock,
} from './schedule-time.ts'

/**
 * Which occurrences of a push campaign are due, pure (docs/campaigns.md, "Schedules and time
 * zones"): each member's variant, outcome, due time and dispatch slot are computed by the engine
 * (plan-sql.ts).
 */

export type DeliveryMode = 'absolute' | 'local' | 'optimized'

export interface DueOccurrence {
  key: string
  /** When sending starts (ms): slot 0 is released then, slot n n minutes later. */
  start: number
  mode: DeliveryMode
  /** Local mode: the wall-clock time each device gets the push at. */
  wallClock?: WallClock
  /** push_throttle_num_msgs: pushes per minute (0: no limit). */
  perMinute: number
  caps: readonly StoredFrequency[] | undefined
}

/**
 * How long before an occurrence's start it is planned: the plan (audience evaluated, every
 * member's variant, due time and slot) is ready when the start comes, so its first slot goes
 * out at once, whatever the audience's size. Members who join the audience in this last minute
 * are not in the occurrence; an edit of the campaign after its plan and before its start has it
 * planned again (executor.ts).
 */
export const PLAN_AHEAD_MS = 60_000

/**
 * How long before its moment a slot is handed to the push pipeline, marked not to be sent before
 * it (`notBefore`): the push planner reads its first pages and the sender holds their batches,
 * so the first pushes leave at the moment instead of a bus hop, a page read and another bus hop
 * after it. A campaign stopped in these last seconds still sends the slot already handed over.
 */
export const DISPATCH_AHEAD_MS = 3_000

/**
 * The occurrences of an active push campaign that start by `now + ahead`, and started no longer
 * ago than the grace (an occurrence missed by more than that is never sent late). Recurring
 * schedules name each occurrence by its date; one-time ones are `once`; begin_immediately is
 * named after the moment the campaign was activated, so re-activating it sends again.
 */
export function dueOccurrences(
  row: CampaignRow,
  body: PushCampaignBody,
  now: number,
  ahead = 0,
): DueOccurrence[] {
  const s = body.schedule
  const recent = (start: number) => start <= now + ahead && now - start <= ONE_TIME_GRACE_MS
  if ('begin_immediately' in s) {
    if (row.activated_at === null) return []
    const start = row.activated_at
    return recent(start)
      ? [
          {
            key: immediateKey(start),
            start,
            mode: 'absolute',
            perMinute: s.begin_immediately.push_throttle_num_msgs ?? 0,
            caps: undefined,
          },
        ]
      : []
  }
  if ('on_schedule' in s) {
    const o = s.on_schedule
    const perMinute = o.push_throttle_num_msgs ?? 0
    if (o.send_local_tz) {
      const wallClock = wallClockOf(o.begin_date)
      const start = atWallClock(wallClock, localStartZone(o.starting_time_zone_id))
      return recent(start) ? [{ key: ONCE, start, mode: 'local', wallClock, perMinute, caps: undefined }] : []
    }
    const start = parseInstant(o.begin_date, o.starting_time_zone_id)
    return recent(start) ? [{ key: ONCE, start, mode: 'absolute', perMinute, caps: undefined }] : []
  }
  if ('recurring' in s) {
    const r = s.recurring
    const wc = wallClockOf(r.begin_date)
    return recurringOccurrences(r, now - ONE_TIME_GRACE_MS, now + ahead).map(({ key, at }) => {
      const [year, month, day] = key.split('-').map(Number) as [number, number, number]
      return {
        key,
        start: at,
        mode: r.send_local_tz ? ('local' as const) : ('absolute' as const),
        ...(r.send_local_tz && { wallClock: { ...wc, year, month, day } }),
        perMinute: r.push_throttle_num_msgs ?? 0,
        caps: r.frequency_attributes,
      }
    })
  }
  const start = parseInstant(s.optimized.fallback_time, undefined)
  return recent(start) ? [{ key: ONCE, start, mode: 'optimized', perMinute: 0, caps: undefined }] : []
}

export type Outcome = 'targeted' | 'control' | 'capped' | 'no_token'

export const SLOT_MS = 60_000

/** The push request id of one slot of an occurrence for one creative: the same on every run. */
export const slotRequestId = (campaignId: number, occurrence: string, slot: number, variant: string) =>
  `campaign:${campaignId}:${occurrence}:${slot}:${variant}`
