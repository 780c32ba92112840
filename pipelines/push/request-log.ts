import type { PushRequestRecord } from '../../schemas/push.ts'
import type { Store } from '../connectors/store/store.ts'
import { cutCodePoints } from '../text/unicode.ts'
import type { RequestState } from './plan.ts'

/** A row of push_requests: one version of a request's planning. */
export interface RequestRow {
  app_id: string
  request_id: string
  generation: number
  org_id: number
  campaign_key: string
  campaign_id: number
  creative: string
  origin: string
  target_type: string
  all_devices: 0 | 1
  messages: number
  targets: string
  received_at: number
  status: 'planning' | 'planned'
  targeted: number
  unmatched: number
  pages: number
  cursor: string
  error: string
  planned_at: number | null
  version: number
}

/** The row of a request's planning state (version: later states win, the final one last). */
export function requestRow(
  record: PushRequestRecord,
  generation: number,
  state: Pick<RequestState, 'status' | 'targeted' | 'unmatched' | 'pages' | 'cursor'> & {
    error?: string
    plannedAt?: number
  },
): RequestRow {
  return {
    app_id: record.appId,
    request_id: record.requestId,
    generation,
    org_id: record.orgId,
    campaign_key: record.campaignKey ?? '',
    campaign_id: record.campaignId ?? 0,
    creative: record.creative ?? '',
    origin: record.origin,
    target_type: record.targetType,
    all_devices: record.allDevices ? 1 : 0,
    messages: record.messages.length,
    targets: targetsOf(record),
    received_at: record.receivedAt,
    status: state.status,
    targeted: state.targeted,
    unmatched: state.unmatched,
    pages: state.pages,
    cursor: state.cursor,
    error: state.error ?? '',
    planned_at: state.plannedAt ?? null,
    version: state.pages * 2 + (state.status === 'planned' ? 1 : 0),
  }
}

export async function writeRequestRows(store: Store, rows: readonly RequestRow[]): Promise<void> {
  if (rows.length > 0) await store.insert('push_requests', rows)
}

/** The latest generation of each (app, request id) asked, by `${app}\n${request}`. */
export async function latestStates(
  store: Store,
  keys: readonly { appId: string; requestId: string }[],
): Promise<Map<string, RequestState>> {
  const found = new Map<string, RequestState>()
  if (keys.length === 0) return found
  const rows = await store.query<{
    app_id: string
    request_id: string
    generation: number | string
    received_at: number | string
    status: string
    targeted: number | string
    unmatched: number | string
    pages: number | string
    cursor: string
  }>(
    `SELECT app_id, request_id, generation, toUnixTimestamp64Milli(received_at) AS received_at, status,
            targeted, unmatched, pages, cursor
     FROM push_requests FINAL
     WHERE app_id IN {apps:Array(String)} AND request_id IN {ids:Array(String)}`,
    {
      apps: [...new Set(keys.map((k) => k.appId))],
      ids: [...new Set(keys.map((k) => k.requestId))],
    },
  )
  for (const r of rows) {
    const key = stateKey(r.app_id, r.request_id)
    const generation = Number(r.generation)
    if ((found.get(key)?.generation ?? -1) > generation) continue
    found.set(key, {
      generation,
      receivedAt: Number(r.received_at),
      status: r.status === 'planned' ? 'planned' : 'planning',
      targeted: Number(r.targeted),
      unmatched: Number(r.unmatched),
      pages: Number(r.pages),
      cursor: r.cursor,
    })
  }
  return found
}

export const stateKey = (appId: string, requestId: string) => `${appId}\n${requestId}`

/** When an app last used a request id (ms), if it did: the edge's check of a repeated request. */
export async function lastUse(store: Store, appId: string, requestId: string): Promise<number | undefined> {
  const [row] = await store.query<{ at: number | string | null }>(
    `SELECT max(toUnixTimestamp64Milli(received_at)) AS at FROM push_requests
     WHERE app_id = {app:String} AND request_id = {id:String}
     HAVING count() > 0`,
    { app: appId, id: requestId },
  )
  return row && row.at !== null ? Number(row.at) : undefined
}

/**
 * The campaign keys an app used first within the window ending at `now`, with when, plus `key`
 * itself if the app ever used it (whenever): what the edge counts new keys against.
 */
export async function campaignKeysOf(
  store: Store,
  appId: string,
  key: string,
  since: number,
): Promise<Map<string, number>> {
  const rows = await store.query<{ campaign_key: string; first: number | string }>(
    `SELECT campaign_key, min(toUnixTimestamp64Milli(received_at)) AS first FROM push_requests
     WHERE app_id = {app:String} AND campaign_key != ''
     GROUP BY campaign_key
     HAVING first >= {since:Int64} OR campaign_key = {key:String}`,
    { app: appId, key, since },
  )
  return new Map(rows.map((r) => [r.campaign_key, Number(r.first)]))
}

/** The request's targets as JSON, cut to 64 KB (a customer_id request may name 10,000 customers). */
function targetsOf(record: PushRequestRecord): string {
  const json = JSON.stringify(record.messages.filter((m) => m.target !== undefined).map((m) => m.target))
  return json.length <= 65_536 ? json : `${cutCodePoints(json, 65_533)}...`
}
