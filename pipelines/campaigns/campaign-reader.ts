import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import type { CampaignRow } from './campaign-commands.ts'
import { CAMPAIGN_COLUMNS, toCampaignRow, type RawCampaignRow } from './campaign-state.ts'

/** Reads of campaigns for the API and the executor (the control applier has its own: campaign-state.ts). */

/** The campaign_key of a campaign's push requests: push reports and opens roll up under it. */
export const campaignKey = (id: number) => `campaign:${id}`

/** The stored campaign `id` of this app, if it exists and is not deleted (any channel). */
export async function readCampaign(
  store: Store,
  appId: string,
  id: number,
): Promise<CampaignRow | undefined> {
  const rows = await store.query<RawCampaignRow>(
    `SELECT ${CAMPAIGN_COLUMNS} FROM campaigns FINAL WHERE id = {id:UInt64} AND app_id = {app:String} AND deleted = 0`,
    { id, app: appId },
  )
  return rows[0] ? toCampaignRow(rows[0]) : undefined
}

/** Every campaign of an app that is not deleted (the list and search read these). */
export async function readAppCampaigns(store: Store, appId: string): Promise<CampaignRow[]> {
  const rows = await store.query<RawCampaignRow>(
    `SELECT ${CAMPAIGN_COLUMNS} FROM campaigns FINAL WHERE app_id = {app:String} AND deleted = 0`,
    { app: appId },
  )
  return rows.map(toCampaignRow)
}

/** Where a campaign's execution stands: its latest occurrence, and how many there were. */
export interface OccurrenceSummary {
  latestKey: string
  latestState: string
  started: number
  done: number
  failed: number
}

export async function readOccurrenceSummaries(
  store: Store,
  appId: string,
): Promise<Map<number, OccurrenceSummary>> {
  const rows = await store.query<{
    campaign_id: string | number
    latest_key: string
    latest_state: string
    started: string | number
    done: string | number
    failed: string | number
  }>(
    `SELECT campaign_id, argMax(occurrence, starts_at) AS latest_key, argMax(state, starts_at) AS latest_state,
            count() AS started, countIf(state = 'done') AS done, countIf(state = 'failed') AS failed
     FROM campaign_occurrences FINAL WHERE app_id = {app:String} GROUP BY campaign_id`,
    { app: appId },
  )
  return new Map(
    rows.map((r) => [
      Number(r.campaign_id),
      {
        latestKey: r.latest_key,
        latestState: r.latest_state,
        started: Number(r.started),
        done: Number(r.done),
        failed: Number(r.failed),
      },
    ]),
  )
}

export interface DeliveryStats {
  sent: number
  opened: number
}

/** Whether the push pipeline's report view exists in a store (it does once migration 013 ran). */
const reportViews = new WeakMap<Store, Promise<boolean>>()

/**
 * Sends and opens of these campaigns, from the push pipeline's records (push_campaign_reports,
 * migration 013: deliveries with status sent; opens are the SDK's push-opened events).
 */
export async function readDeliveryStats(
  store: Store,
  appId: string,
  ids: readonly number[],
): Promise<Map<number, DeliveryStats>> {
  if (ids.length === 0) return new Map()
  let view = reportViews.get(store)
  if (!view) {
    view = store
      .query<{ n: string | number }>(
        `SELECT count() AS n FROM system.tables WHERE database = currentDatabase() AND name = 'push_campaign_reports'`,
      )
      .then((r) => Number(r[0]?.n ?? 0) > 0)
    reportViews.set(store, view)
  }
  if (!(await view)) {
    reportViews.delete(store)
    return new Map()
  }
  const keys = stringSet('keys', ids.map(campaignKey))
  const rows = await store.query<{
    campaign_key: string
    sent: string | number | null
    opened: string | number | null
  }>(
    `SELECT campaign_key, sent, opened FROM push_campaign_reports
     WHERE app_id = {app:String} AND campaign_key IN ${keys.sql}`,
    { app: appId, keys: keys.value },
  )
  return new Map(
    rows.map((r) => [
      Number(r.campaign_key.slice('campaign:'.length)),
      { sent: Number(r.sent ?? 0), opened: Number(r.opened ?? 0) },
    ]),
  )
}
