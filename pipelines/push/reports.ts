import type { Store } from '../connectors/store/store.ts'

/** Events that tell Sluice a push was opened, when they carry its request_id or campaign_key attribute. */
export const PUSH_OPENED_EVENTS = ['Push Opened', 'Localytics Push Opened'] as const

/** A campaign_key's roll-up: GET /v2/push/:app_id/reports/:campaign_key. */
export interface CampaignReport {
  app_id: string
  campaign_key: string
  /** Requests that carried the key (each use of a request id once). */
  requests: number
  /** Installs the requests' targets resolved to. */
  targeted: number
  sent: number
  failed: number
  /** Targeted but not yet recorded as sent or failed (still being planned, sent or retried). */
  pending: number
  /** Installs that opened a push of the campaign (events named in PUSH_OPENED_EVENTS). */
  opened: number
  first_request_at: string
  last_request_at: string
}

/** The report of a campaign key of an app; undefined when no request of the app carried it. */
export async function campaignReport(
  store: Store,
  appId: string,
  campaignKey: string,
): Promise<CampaignReport | undefined> {
  const params = { app: appId, key: campaignKey, opened: PUSH_OPENED_EVENTS }
  const [requests] = await store.query<{ requests: string; targeted: string; first: string; last: string }>(
    `SELECT count() AS requests, sum(targeted) AS targeted,
            toUnixTimestamp64Milli(min(received_at)) AS first, toUnixTimestamp64Milli(max(received_at)) AS last
     FROM push_requests FINAL
     WHERE app_id = {app:String} AND campaign_key = {key:String}`,
    params,
  )
  if (!requests || Number(requests.requests) === 0) return undefined
  const [deliveries] = await store.query<{ sent: string; failed: string }>(
    `SELECT countIf(status = 'sent') AS sent, countIf(status = 'failed') AS failed
     FROM push_deliveries FINAL
     WHERE app_id = {app:String} AND campaign_key = {key:String}`,
    params,
  )
  const [opens] = await store.query<{ opened: string }>(
    `SELECT uniqExact(if(install_uuid != '', install_uuid, uuid)) AS opened
     FROM events
     WHERE app_id = {app:String} AND event_name IN {opened:Array(String)}
       AND (attributes['campaign_key'] = {key:String}
            OR attributes['request_id'] IN (
              SELECT request_id FROM push_requests WHERE app_id = {app:String} AND campaign_key = {key:String}))`,
    params,
  )
  const targeted = Number(requests.targeted)
  const sent = Number(deliveries?.sent ?? 0)
  const failed = Number(deliveries?.failed ?? 0)
  return {
    app_id: appId,
    campaign_key: campaignKey,
    requests: Number(requests.requests),
    targeted,
    sent,
    failed,
    pending: Math.max(0, targeted - sent - failed),
    opened: Number(opens?.opened ?? 0),
    first_request_at: new Date(Number(requests.first)).toISOString(),
    last_request_at: new Date(Number(requests.last)).toISOString(),
  }
}
