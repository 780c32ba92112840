import type { Store } from '../connectors/store/store.ts'
import type { InappCampaignBody, PushCampaignBody } from '../../schemas/campaigns.ts'
import type { CampaignRow } from './campaign-commands.ts'
import { filtersCondition } from './conversion-sql.ts'
import { CLICK_EVENTS, IMPRESSION_EVENTS } from './inapp-offers.ts'

/**
 * A campaign's results per variant (each creative letter, and the control group): how many
 * installs were assigned, how many were targeted (a push handed to the push pipeline), how many
 * converted, and each creative's lift over the control group (docs/campaigns.md, "Conversions").
 *
 * A conversion is the campaign's conversion_event (with its filters) performed by the install
 * within CONVERSION_WINDOW_DAYS after its push was due; a control member counts from the moment
 * its push would have been due, so the two rates compare like with like. Assignments are read
 * from the occurrences' standing plans only (campaign_occurrences.plan_id).
 */
export const CONVERSION_WINDOW_DAYS = 7

export interface VariantPerformance {
  variant: string
  creative_id: number | null
  assigned: number
  targeted: number
  sent: number
  conversions: number
  conversion_rate: number
  /** (rate − control rate) / control rate; null for the control group or when the control rate is 0. */
  lift: number | null
}

export interface CampaignPerformance {
  campaign_id: number
  conversion_event: string | null
  conversion_window_days: number
  variants: VariantPerformance[]
}

export async function readCampaignPerformance(store: Store, row: CampaignRow): Promise<CampaignPerformance> {
  if (row.channel === 'inapp') return readInappPerformance(store, row)
  const body = JSON.parse(row.body) as PushCampaignBody | InappCampaignBody
  const conversion = body.conversion_event
  const params: Record<string, unknown> = {
    campaign: row.id,
    app: row.app_id,
    event: conversion?.event_name ?? '',
    window: CONVERSION_WINDOW_DAYS,
  }
  const filters = filtersCondition(conversion?.conversion_attributes, params, 'cf')
  const converting = conversion
    ? `SELECT install_uuid, groupArray(event_time) AS times FROM events
       WHERE app_id = {app:String} AND event_name = {event:String} AND install_uuid != '' AND ${filters}
         AND install_uuid IN (SELECT install_uuid FROM campaign_sends WHERE campaign_id = {campaign:UInt64})
       GROUP BY install_uuid`
    : `SELECT '' AS install_uuid, CAST([], 'Array(DateTime64(3, \\'UTC\\'))') AS times WHERE 0`
  const rows = await store.query<{
    variant: string
    creative_id: string | number
    assigned: string | number
    targeted: string | number
    conversions: string | number
  }>(
    `SELECT m.variant AS variant, any(m.creative_id) AS creative_id, count() AS assigned,
            countIf(m.outcome = 'targeted') AS targeted,
            countIf(arrayExists(t -> t >= m.due_at AND t < m.due_at + toIntervalDay({window:UInt32}), c.times)) AS conversions
     FROM
     (
       SELECT s.install_uuid AS install_uuid, s.occurrence AS occurrence, s.variant AS variant,
              s.creative_id AS creative_id, s.outcome AS outcome, s.due_at AS due_at
       FROM campaign_sends AS s
       INNER JOIN
       (
         SELECT occurrence, plan_id FROM campaign_occurrences FINAL
         WHERE campaign_id = {campaign:UInt64} AND state IN ('planned', 'done')
       ) AS o ON o.occurrence = s.occurrence AND toInt64(o.plan_id) = toUnixTimestamp64Milli(s.planned_at)
       WHERE s.campaign_id = {campaign:UInt64}
     ) AS m
     LEFT JOIN (${converting}) AS c ON c.install_uuid = m.install_uuid
     GROUP BY variant ORDER BY variant = 'control', variant`,
    params,
  )
  const sent = await readSent(store, row)
  const variants = rows.map((r) => {
    const assigned = Number(r.assigned)
    const conversions = Number(r.conversions)
    return {
      variant: r.variant,
      creative_id: r.variant === 'control' ? null : Number(r.creative_id),
      assigned,
      targeted: Number(r.targeted),
      sent: sent.get(r.variant) ?? 0,
      conversions,
      conversion_rate: assigned === 0 ? 0 : conversions / assigned,
      lift: null as number | null,
    }
  })
  const control = variants.find((v) => v.variant === 'control')
  for (const v of variants)
    if (v.variant !== 'control' && control && control.conversion_rate > 0)
      v.lift = (v.conversion_rate - control.conversion_rate) / control.conversion_rate
  return {
    campaign_id: row.id,
    conversion_event: conversion?.event_name ?? null,
    conversion_window_days: CONVERSION_WINDOW_DAYS,
    variants,
  }
}

/** Deliveries the push pipeline recorded as sent, per creative letter (0 before push exists). */
async function readSent(store: Store, row: CampaignRow): Promise<Map<string, number>> {
  if (row.channel !== 'push') return new Map()
  const exists = await store.query<{ n: string | number }>(
    `SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'push_deliveries'`,
  )
  if (Number(exists[0]?.n ?? 0) === 0) return new Map()
  const rows = await store.query<{ creative: string; sent: string | number }>(
    `SELECT creative, countIf(status = 'sent') AS sent FROM push_deliveries FINAL
     WHERE app_id = {app:String} AND campaign_id = {campaign:UInt64} GROUP BY creative`,
    { app: row.app_id, campaign: row.id },
  )
  return new Map(rows.map((r) => [r.creative, Number(r.sent)]))
}

/**
 * An in-app campaign's results per creative, from the SDK's events (inapp-offers.ts): `assigned`
 * and `targeted` are the installs shown the creative (an impression), `sent` its clicks, and a
 * conversion the conversion event within the window after the install's first impression. The
 * control group never asks for what it is not shown, so in-app results have no control row and
 * no lift.
 */
async function readInappPerformance(store: Store, row: CampaignRow): Promise<CampaignPerformance> {
  const body = JSON.parse(row.body) as InappCampaignBody
  const conversion = body.conversion_event
  const params: Record<string, unknown> = {
    app: row.app_id,
    campaign: String(row.id),
    shown: [...IMPRESSION_EVENTS],
    clicked: [...CLICK_EVENTS],
    event: conversion?.event_name ?? '',
    window: CONVERSION_WINDOW_DAYS,
  }
  const filters = filtersCondition(conversion?.conversion_attributes, params, 'cf')
  const rows = await store.query<{
    creative: string
    installs: string | number
    clicks: string | number
    conversions: string | number
  }>(
    `SELECT s.creative AS creative, count() AS installs, sum(s.clicks) AS clicks,
            countIf(arrayExists(t -> t >= s.first AND t < s.first + toIntervalDay({window:UInt32}), c.times)) AS conversions
     FROM
     (
       SELECT install_uuid, attributes['creative_id'] AS creative,
              minIf(event_time, event_name IN {shown:Array(String)}) AS first,
              countIf(event_name IN {clicked:Array(String)}) AS clicks
       FROM events
       WHERE app_id = {app:String} AND event_name IN arrayConcat({shown:Array(String)}, {clicked:Array(String)})
         AND attributes['campaign_id'] = {campaign:String} AND install_uuid != ''
       GROUP BY install_uuid, creative
       HAVING countIf(event_name IN {shown:Array(String)}) > 0
     ) AS s
     LEFT JOIN
     (
       SELECT install_uuid, groupArray(event_time) AS times FROM events
       WHERE app_id = {app:String} AND event_name = {event:String} AND install_uuid != '' AND ${filters}
       GROUP BY install_uuid
     ) AS c ON c.install_uuid = s.install_uuid
     GROUP BY creative`,
    params,
  )
  const byId = new Map(rows.map((r) => [r.creative, r]))
  const variants = body.creatives.map((c) => {
    const r = byId.get(String(c.id))
    const shown = Number(r?.installs ?? 0)
    const conversions = conversion ? Number(r?.conversions ?? 0) : 0
    return {
      variant: c.letter,
      creative_id: c.id,
      assigned: shown,
      targeted: shown,
      sent: Number(r?.clicks ?? 0),
      conversions,
      conversion_rate: shown === 0 ? 0 : conversions / shown,
      lift: null,
    }
  })
  return {
    campaign_id: row.id,
    conversion_event: conversion?.event_name ?? null,
    conversion_window_days: CONVERSION_WINDOW_DAYS,
    variants,
  }
}
