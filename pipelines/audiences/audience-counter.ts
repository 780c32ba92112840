import type { Clock } from '../clock.ts'
import type { BusRecord } from '../connectors/bus/bus.ts'
import type { QueryParams, Store } from '../connectors/store/store.ts'
import {
  deadLetter,
  PermanentError,
  retryLater,
  type Outcome,
  type StageHandler,
} from '../failures/outcome.ts'
import { parseTargetRules } from '../../schemas/audiences.ts'
import type { AudienceRow } from './audience-commands.ts'
import { readAudienceRows } from './audience-reader.ts'
import { compileCounts } from './compile-rules.ts'
import { decodeCountRequest, type CountRequest } from './count-requests.ts'

/** The profile dbs an app's audiences read (the app's own and its org's). */
export interface ProfileDbDirectory {
  profileDbsOf(appId: string): Promise<{ appProfiledbId: number; orgProfiledbId: number } | undefined>
}

/** Runs a compiled count query: one row of the three counts. */
export type CountQuery = (
  sql: string,
  params: QueryParams,
) => Promise<{ user_count: number; has_push: number; seen_last_thirty: number }>

export interface AudienceCounterDeps {
  store: Store
  profileDbs: ProfileDbDirectory
  /** Where count queries run (default: the store's query connection). */
  countQuery?: CountQuery
  clock?: Pick<Clock, 'now'>
  onCounted?: (audienceId: number, ms: number) => void
}

/** A row of `audience_counts` (migration 012). */
export interface CountsRow {
  audience_id: number
  org_id: number
  app_id: string
  user_count: number
  has_push: number
  seen_last_thirty: number
  calculated_at: number
  requested_at: number
  audience_version: number
  duration_ms: number
  version: number
}

/** Counts through any reader of the store (its own connection, or capped reads). */
export const storeCountQuery =
  (store: Pick<Store, 'query'>): CountQuery =>
  async (sql, params) => {
    const [row] = await store.query<Record<string, number | string>>(sql, params)
    return {
      user_count: Number(row?.user_count ?? 0),
      has_push: Number(row?.has_push ?? 0),
      seen_last_thirty: Number(row?.seen_last_thirty ?? 0),
    }
  }

/**
 * The audience counter: a worker stage on the audience-counts topic. For a batch of requests it
 * counts each audience named once (however many requests name it: one computation after all of
 * them answers them all), with its rules as they stand now, and writes one `audience_counts` row
 * per audience. Requests for a deleted, unknown or moved audience, or one of a deleted app, are
 * done with nothing to count.
 *
 * Counts are derived data, not control state: they are written here, never through the control
 * topic, so counting a million installs never holds up the control applier (DESIGN.md).
 */
export function audienceCounter(deps: AudienceCounterDeps): StageHandler {
  const clock = deps.clock ?? Date
  const countQuery = deps.countQuery ?? storeCountQuery(deps.store)

  return async (batch) => {
    const outcomes: { record: BusRecord; outcome: Outcome }[] = []
    const wanted = new Map<number, { request: CountRequest; records: BusRecord[] }>()
    for (const record of batch.records) {
      const decoded = decodeCountRequest(record)
      if (!decoded.ok) {
        outcomes.push({ record, outcome: deadLetter(new PermanentError(decoded.reason)) })
        continue
      }
      const { request } = decoded
      const seen = wanted.get(request.audience_id)
      if (!seen) wanted.set(request.audience_id, { request, records: [record] })
      else {
        seen.records.push(record)
        if (request.requested_at > seen.request.requested_at) seen.request = request
      }
    }
    if (wanted.size === 0) return { outcomes }
    const rows = await readAudienceRows(deps.store, [...wanted.keys()])
    const byId = new Map(rows.map((r) => [r.id, r]))
    const counted: CountsRow[] = []
    for (const [id, { request, records }] of wanted) {
      const audience = byId.get(id)
      if (!audience || audience.deleted_at !== null) continue
      if (audience.org_id !== request.org_id || audience.app_id !== request.app_id) continue
      try {
        const row = await countOne(audience, request)
        if (row) counted.push(row)
      } catch (err) {
        const outcome = err instanceof PermanentError ? deadLetter(err) : retryLater(err)
        for (const record of records) outcomes.push({ record, outcome })
      }
    }
    if (counted.length > 0) await deps.store.insert('audience_counts', counted)
    return { outcomes }
  }

  /** Undefined when the audience's app is gone (deleted): nothing to count, as for a deleted audience. */
  async function countOne(audience: AudienceRow, request: CountRequest): Promise<CountsRow | undefined> {
    const dbs = await deps.profileDbs.profileDbsOf(audience.app_id)
    if (!dbs) return undefined
    const parsed = parseTargetRules(JSON.parse(audience.target_rules))
    if (!parsed.ok)
      throw new PermanentError(
        `stored rules of audience ${audience.id} no longer parse: ${parsed.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`,
      )
    const started = clock.now()
    const { sql, params } = compileCounts(parsed.rules, {
      appId: audience.app_id,
      appProfiledbId: dbs.appProfiledbId,
      orgProfiledbId: dbs.orgProfiledbId,
      now: started,
    })
    const counts = await countQuery(sql, params)
    const calculatedAt = clock.now()
    deps.onCounted?.(audience.id, calculatedAt - started)
    return {
      audience_id: audience.id,
      org_id: audience.org_id,
      app_id: audience.app_id,
      ...counts,
      calculated_at: calculatedAt,
      requested_at: request.requested_at,
      audience_version: audience.version,
      duration_ms: Math.min(calculatedAt - started, 0xffffffff),
      version: calculatedAt,
    }
  }
}
