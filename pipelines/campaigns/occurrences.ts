import type { PushCampaignBody, StoredFrequency } from '../../schemas/campaigns.ts'
import { capAllows, CONTROL, variantOf } from './assign-variant.ts'
import type { CampaignRow } from './campaign-commands.ts'
import { immediateKey, ONCE, ONE_TIME_GRACE_MS } from './campaign-list.ts'
import {
  atWallClock,
  deviceZone,
  localDeliveryTime,
  localStartZone,
  optimizedDeliveryTime,
  parseInstant,
  recurringOccurrences,
  wallClockOf,
  type WallClock,
} from './schedule-time.ts'

/**
 * The execution plan of a push campaign's occurrence, pure (docs/campaigns.md, "Schedules and
 * time zones", "Throttling and frequency caps", "A/B and control group"): which occurrences are
 * due, and for each member of the audience its variant, outcome, due time and dispatch slot.
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

/** A member row of the audience compiler (compileMembers). */
export interface Member {
  install_uuid: string
  customer_id: string
  device_timezone: string
  has_push: number | string
}

export type Outcome = 'targeted' | 'control' | 'capped' | 'no_token'

/** A row of campaign_sends (migration 016). */
export interface SendRow {
  app_id: string
  campaign_id: number
  occurrence: string
  install_uuid: string
  customer_id: string
  variant: string
  creative_id: number
  outcome: Outcome
  due_at: number
  slot: number
  request_id: string
  planned_at: number
}

export const SLOT_MS = 60_000

/** The push request id of one slot of an occurrence for one creative: the same on every run. */
export const slotRequestId = (campaignId: number, occurrence: string, slot: number, variant: string) =>
  `campaign:${campaignId}:${occurrence}:${slot}:${variant}`

/**
 * Slots of one minute from the occurrence's start, each holding at most `perMinute` pushes
 * (0: no limit). A push due at `t` goes to the first slot released at or after `t` that has
 * room, so it is never sent early and a throttled occurrence spreads over the minutes after.
 */
export class SlotAssigner {
  private readonly counts = new Map<number, number>()
  /** Skips full slots quickly: full slot → a later slot that may have room (path-compressed). */
  private readonly next = new Map<number, number>()
  last = -1

  constructor(
    private readonly start: number,
    private readonly perMinute: number,
  ) {}

  assign(dueAt: number): number {
    let slot = dueAt <= this.start ? 0 : Math.ceil((dueAt - this.start) / SLOT_MS)
    if (this.perMinute > 0) {
      slot = this.free(slot)
      const n = (this.counts.get(slot) ?? 0) + 1
      this.counts.set(slot, n)
      if (n >= this.perMinute) this.next.set(slot, slot + 1)
    }
    if (slot > this.last) this.last = slot
    return slot
  }

  private free(slot: number): number {
    const path: number[] = []
    let s = slot
    for (let n = this.next.get(s); n !== undefined; n = this.next.get(s)) {
      path.push(s)
      s = n
    }
    for (const p of path) this.next.set(p, s)
    return s
  }
}

export interface PlanTotals {
  members: number
  heldOut: number
  capped: number
  targeted: number
}

/**
 * Turns pages of members into campaign_sends rows: each member's variant by the stable hash,
 * then its outcome (control, no push token, held back by a frequency cap, or targeted) and, when
 * targeted, its due time and slot.
 */
export class OccurrencePlanner {
  readonly slots: SlotAssigner
  readonly totals: PlanTotals = { members: 0, heldOut: 0, capped: 0, targeted: 0 }
  private readonly creativeIds: Map<string, number>

  constructor(
    private readonly campaign: { id: number; appId: string; body: PushCampaignBody },
    private readonly due: DueOccurrence,
    private readonly planId: number,
  ) {
    this.slots = new SlotAssigner(due.start, due.perMinute)
    this.creativeIds = new Map(campaign.body.creatives.map((c) => [c.letter, c.id]))
  }

  /**
   * `usualHour`: each install's usual UTC hour of activity (optimized mode); `previous`: times of
   * the campaign's earlier pushes to each install (frequency caps).
   */
  add(
    members: readonly Member[],
    usualHour: ReadonlyMap<string, number> = new Map(),
    previous: ReadonlyMap<string, readonly number[]> = new Map(),
  ): SendRow[] {
    const { id, appId, body } = this.campaign
    return members.map((m) => {
      this.totals.members++
      const variant = variantOf(id, m.install_uuid, body.audiences.control_group_percent, body.creatives)
      const dueAt = this.dueAt(m, usualHour)
      let outcome: Outcome = 'targeted'
      if (variant === CONTROL) outcome = 'control'
      else if (Number(m.has_push) !== 1) outcome = 'no_token'
      else if (!capAllows(this.due.caps, previous.get(m.install_uuid) ?? [], dueAt)) outcome = 'capped'
      if (outcome === 'control') this.totals.heldOut++
      if (outcome === 'capped') this.totals.capped++
      const slot = outcome === 'targeted' ? this.slots.assign(dueAt) : 0
      if (outcome === 'targeted') this.totals.targeted++
      return {
        app_id: appId,
        campaign_id: id,
        occurrence: this.due.key,
        install_uuid: m.install_uuid,
        customer_id: m.customer_id,
        variant,
        creative_id: variant === CONTROL ? 0 : (this.creativeIds.get(variant) ?? 0),
        outcome,
        due_at: dueAt,
        slot,
        request_id: outcome === 'targeted' ? slotRequestId(id, this.due.key, slot, variant) : '',
        planned_at: this.planId,
      }
    })
  }

  private dueAt(m: Member, usualHour: ReadonlyMap<string, number>): number {
    if (this.due.mode === 'local' && this.due.wallClock)
      return localDeliveryTime(this.due.wallClock, this.due.start, deviceZone(m.device_timezone))
    if (this.due.mode === 'optimized')
      return optimizedDeliveryTime(this.due.start, usualHour.get(m.install_uuid))
    return this.due.start
  }

  /** Slots the plan uses (0..last), and when its last push is due. */
  get slotCount(): number {
    return this.slots.last + 1
  }

  get endsAt(): number {
    return this.due.start + Math.max(0, this.slots.last) * SLOT_MS
  }
}
