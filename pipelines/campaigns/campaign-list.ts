import type {
  CampaignListItem,
  InappCampaignBody,
  ListQuery,
  ListStatus,
  PushCampaignBody,
} from '../../schemas/campaigns.ts'
import type { CampaignRow } from './campaign-commands.ts'
import type { DeliveryStats, OccurrenceSummary } from './campaign-reader.ts'
import { atWallClock, localStartZone, parseInstant, wallClockOf } from './schedule-time.ts'

/**
 * The campaign list and search (pure): each campaign's list status, derived from what the client
 * set (active / draft), its schedule and how far its execution got, then filtered, sorted and
 * paged. The mapping is docs/campaigns.md, "List status".
 */

/** A one-time occurrence not started this long after its time is expired, never sent late. */
export const ONE_TIME_GRACE_MS = 60 * 60 * 1000
const DAY_MS = 86_400_000

export interface ScheduleFacts {
  kind: 'begin_immediately' | 'on_schedule' | 'recurring' | 'optimized' | 'inapp'
  recurring: 0 | 1
  sendLocalTz: 0 | 1
  /** When sending starts (ms), null when not known yet (a draft to send immediately). */
  begin: number | null
  end: number | null
}

/** The occurrence key of a one-time schedule, and of a begin_immediately activation. */
export const ONCE = 'once'
export const immediateKey = (activatedAt: number) => `i${activatedAt}`

export function scheduleFacts(row: CampaignRow, body: PushCampaignBody | InappCampaignBody): ScheduleFacts {
  if (row.channel === 'inapp') {
    const s = (body as InappCampaignBody).schedule
    const zone = s.starting_time_zone_id
    return {
      kind: 'inapp',
      recurring: 0,
      sendLocalTz: 0,
      begin: parseInstant(s.begin_date, zone),
      end: s.end_date ? parseInstant(s.end_date, zone) : null,
    }
  }
  const s = (body as PushCampaignBody).schedule
  if ('begin_immediately' in s)
    return { kind: 'begin_immediately', recurring: 0, sendLocalTz: 0, begin: row.activated_at, end: null }
  if ('on_schedule' in s) {
    const o = s.on_schedule
    if (o.send_local_tz) {
      const start = atWallClock(wallClockOf(o.begin_date), localStartZone(o.starting_time_zone_id))
      return { kind: 'on_schedule', recurring: 0, sendLocalTz: 1, begin: start, end: start + DAY_MS }
    }
    return {
      kind: 'on_schedule',
      recurring: 0,
      sendLocalTz: 0,
      begin: parseInstant(o.begin_date, o.starting_time_zone_id),
      end: null,
    }
  }
  if ('recurring' in s) {
    const r = s.recurring
    const zone = r.starting_time_zone_id
    const at = (d: string) =>
      r.send_local_tz ? atWallClock(wallClockOf(d), localStartZone(zone)) : parseInstant(d, zone)
    return {
      kind: 'recurring',
      recurring: 1,
      sendLocalTz: r.send_local_tz ? 1 : 0,
      begin: at(r.begin_date),
      end: at(r.end_date),
    }
  }
  const fallback = parseInstant(s.optimized.fallback_time, undefined)
  return { kind: 'optimized', recurring: 0, sendLocalTz: 0, begin: fallback, end: fallback + DAY_MS }
}

export function campaignStatus(
  row: CampaignRow,
  facts: ScheduleFacts,
  occ: OccurrenceSummary | undefined,
  now: number,
): ListStatus {
  if (row.status === 'draft') return row.activated_at === null ? 'draft' : 'inactive'
  if (facts.kind === 'inapp') {
    if (facts.begin !== null && now < facts.begin) return 'scheduled'
    if (facts.end !== null && now >= facts.end) return 'expired'
    return 'active'
  }
  if (occ && occ.latestState === 'failed') return 'error'
  const running = occ !== undefined && occ.latestState !== 'done'
  // Archived campaigns are stopped: one caught mid-send sends no more.
  if (row.archived === 1 && running) return 'inactive'
  switch (facts.kind) {
    case 'begin_immediately': {
      const current = row.activated_at === null ? undefined : immediateKey(row.activated_at)
      return occ?.latestKey === current && occ?.latestState === 'done' ? 'sent' : 'active'
    }
    case 'on_schedule':
    case 'optimized': {
      // An occurrence is planned a minute ahead of its start, and its first slot handed over
      // seconds ahead (DISPATCH_AHEAD_MS): until the start the campaign is scheduled.
      if (facts.begin !== null && now < facts.begin) return 'scheduled'
      if (occ?.latestState === 'done') return 'sent'
      if (running) return 'active'
      if (facts.begin !== null && now >= facts.begin + ONE_TIME_GRACE_MS) return 'expired'
      return 'active'
    }
    case 'recurring': {
      if (facts.begin !== null && now < facts.begin) return 'scheduled'
      if (facts.end !== null && now > facts.end && !running) return 'expired'
      return 'active'
    }
  }
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString())

export function openRate(stats: DeliveryStats | undefined): string {
  if (!stats || stats.sent === 0) return '0.00%'
  return `${((100 * stats.opened) / stats.sent).toFixed(2)}%`
}

export interface ListContext {
  now: number
  occurrences: ReadonlyMap<number, OccurrenceSummary>
  stats: ReadonlyMap<number, DeliveryStats>
}

export function listItem(row: CampaignRow, ctx: ListContext): CampaignListItem {
  const body = JSON.parse(row.body) as PushCampaignBody | InappCampaignBody
  const facts = scheduleFacts(row, body)
  const stats = ctx.stats.get(row.id)
  return {
    id: row.id,
    name: row.name,
    message_type: row.channel === 'push' ? 'push' : 'in-app',
    platform: 'all',
    send_local_tz: facts.sendLocalTz,
    recurring: facts.recurring,
    begin_date: iso(facts.begin),
    end_date: iso(facts.end),
    created_at: new Date(row.created_at).toISOString(),
    updated_at: new Date(row.updated_at).toISOString(),
    status: campaignStatus(row, facts, ctx.occurrences.get(row.id), ctx.now),
    sends: stats?.sent ?? 0,
    open_rate: openRate(stats),
  }
}

/** Rows of one app → the page the query asks for, and how many matched in all. */
export function selectCampaigns(
  rows: readonly CampaignRow[],
  query: ListQuery,
  ctx: ListContext,
): { total: number; items: CampaignListItem[] } {
  const channels = query.channel?.map((c) => (c === 'inapp' ? 'in-app' : c))
  const key = query.key?.trim().toLowerCase()
  const candidates = rows.filter((row) => {
    if (channels && !channels.includes(row.channel === 'push' ? 'push' : 'in-app')) return false
    if (query.is_archived !== undefined && row.archived !== query.is_archived) return false
    if (key !== undefined && key !== '' && !row.name.toLowerCase().includes(key) && String(row.id) !== key)
      return false
    return true
  })
  const items = candidates
    .map((row) => listItem(row, ctx))
    .filter((item) => {
      if (query.recurring === 1 && item.recurring !== 1) return false
      if (query.recurring === 2 && item.recurring !== 0) return false
      if (query.status && !(query.status as readonly string[]).includes(item.status)) return false
      return true
    })
  const direction = query.sort_order === 'asc' ? 1 : -1
  items.sort((a, b) => {
    const primary =
      query.sort_by === 'name' ? a.name.localeCompare(b.name) : a.created_at.localeCompare(b.created_at)
    return (primary !== 0 ? primary : a.id - b.id) * direction
  })
  const start = (query.page_number - 1) * query.per_page
  return { total: items.length, items: items.slice(start, start + query.per_page) }
}
