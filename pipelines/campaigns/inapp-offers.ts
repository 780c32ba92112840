import type { Store } from '../connectors/store/store.ts'
import type { InappCampaignBody, StoredAsset, StoredInappSchedule } from '../../schemas/campaigns.ts'
import { capAllows, capLookbackMs, CONTROL, variantOf } from './assign-variant.ts'
import type { CampaignRow } from './campaign-commands.ts'
import { audienceContext, campaignRules, EVERYONE, isMember } from './campaign-audience.ts'
import { parseInstant } from './schedule-time.ts'

/**
 * The in-app campaigns one install qualifies for now (GET /v1/sdk/apps/:app_key/inapp): active,
 * not archived, within their dates, for its device type, in their audience, not in the control
 * group, and under their frequency caps. The SDK reports what it showed as events of these
 * names (docs/campaigns.md, "The SDK endpoint"), with attributes campaign_id and creative_id:
 * impressions count against the frequency caps.
 */
export const IMPRESSION_EVENTS = ['In-App Displayed', 'Localytics In-App Displayed'] as const
export const CLICK_EVENTS = ['In-App Clicked', 'Localytics In-App Clicked'] as const

export interface InappOffer {
  campaign: CampaignRow
  body: InappCampaignBody
  creative: InappCampaignBody['creatives'][number]
  asset: StoredAsset
}

/** Active in-app campaigns whose dates hold `now` (pure). */
export function liveInappCampaigns(rows: readonly CampaignRow[], now: number): CampaignRow[] {
  return rows.filter((row) => {
    if (row.channel !== 'inapp' || row.status !== 'active' || row.archived === 1 || row.deleted === 1)
      return false
    const s = (JSON.parse(row.body) as InappCampaignBody).schedule
    return inWindow(s, now)
  })
}

function inWindow(s: StoredInappSchedule, now: number): boolean {
  const zone = s.starting_time_zone_id
  if (now < parseInstant(s.begin_date, zone)) return false
  return !s.end_date || now < parseInstant(s.end_date, zone)
}

export async function inappOffers(
  store: Store,
  scope: { orgId: number; appId: string },
  installUuid: string,
  device: 'phone' | 'tablet',
  candidates: readonly CampaignRow[],
  now: number,
): Promise<InappOffer[]> {
  const bodies = candidates.map((row) => ({ row, body: JSON.parse(row.body) as InappCampaignBody }))
  const lookback = Math.max(0, ...bodies.map((b) => capLookbackMs(b.body.schedule.frequency_attributes)))
  const shown: Map<number, number[]> =
    lookback > 0
      ? await readImpressions(store, scope.appId, installUuid, now - lookback)
      : new Map<number, number[]>()
  const ctx = await audienceContext(store, scope.appId, now)
  if (!ctx) return []
  const offers: InappOffer[] = []
  for (const { row, body } of bodies) {
    if (!(body.audiences.devices ?? ['phone', 'tablet']).includes(device)) continue
    const variant = variantOf(row.id, installUuid, body.audiences.control_group_percent, body.creatives)
    if (variant === CONTROL) continue
    if (!capAllows(body.schedule.frequency_attributes, shown.get(row.id) ?? [], now)) continue
    const creative = body.creatives.find((c) => c.letter === variant)
    const files = creative && body.assets[creative.letter]
    // The device's own file, else the other one: a phone-only creative still shows on a tablet.
    const asset =
      files && (device === 'tablet' ? (files.tablet ?? files.phone) : (files.phone ?? files.tablet))
    if (!creative || !asset) continue
    let rules
    try {
      rules = await campaignRules(store, scope, body.audiences)
    } catch {
      continue // its saved audience was deleted: it reaches no one
    }
    if (!(rules.length === 1 && rules[0] === EVERYONE) && !(await isMember(store, rules, ctx, installUuid)))
      continue
    offers.push({ campaign: row, body, creative, asset })
  }
  return offers
}

/** When this install was shown each campaign since `from` (ms), from its impression events. */
async function readImpressions(
  store: Store,
  appId: string,
  installUuid: string,
  from: number,
): Promise<Map<number, number[]>> {
  const rows = await store.query<{ campaign: string; times: (string | number)[] }>(
    `SELECT attributes['campaign_id'] AS campaign, groupArray(toUnixTimestamp64Milli(event_time)) AS times
     FROM events
     WHERE app_id = {app:String} AND event_name IN {names:Array(String)} AND install_uuid = {install:String}
       AND event_time >= fromUnixTimestamp64Milli({from:Int64}) AND attributes['campaign_id'] != ''
     GROUP BY campaign`,
    { app: appId, names: [...IMPRESSION_EVENTS], install: installUuid, from },
  )
  return new Map(rows.map((r) => [Number(r.campaign), r.times.map(Number)]))
}
