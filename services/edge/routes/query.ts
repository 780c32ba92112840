import { Hono, type Context } from 'hono'
import { systemClock, type Clock } from '../../../pipelines/clock.ts'
import type { CappedReads } from '../../../pipelines/connectors/store/capped-reads.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import { readAppSettings } from '../../../pipelines/query/app-settings.ts'
import { compileQuery } from '../../../pipelines/query/compile-query.ts'
import { parseQuery, QueryError } from '../../../pipelines/query/parse-query.ts'
import { queryEcho, resultCsv, resultRows } from '../../../pipelines/query/result-set.ts'
import type { ControlStore } from '../../control/control-store.ts'
import type { ConcurrencyLimit } from '../../shared/concurrency-limit.ts'
import { badRequest, forbidden, SluiceError } from '../../shared/errors.ts'
import type { EdgeEnv } from '../env.ts'
import { analystRequest, ownApps } from '../query/analyst-request.ts'
import type { QueryKeyLimits } from '../query/key-limits.ts'

export const RESULT_SET_TYPE = 'application/vnd.localytics.v1+hal+json;type=ResultSet'

export interface QueryRouteDeps {
  control: ControlStore
  /** Settings (time zones) are read here; the analyst's query runs on `reads`. */
  store: Store
  reads: CappedReads
  limits: QueryKeyLimits
  /** Analyst reads running at once on this edge, whatever their keys (shared with the Apps API). */
  engineTurns: ConcurrencyLimit
  clock?: Clock
}

/**
 * The Query API (spec query-api.md; docs/query-api.md): `GET|POST /v1/query` and
 * `/v1/apps/:app_id/query`. The parameters become one compiled, parameterised query over the apps
 * of the key's org, run under the engine's caps (capped-reads.ts), a few at once (`engineTurns`).
 */
export function queryRoutes(deps: QueryRouteDeps) {
  const app = new Hono<EdgeEnv>()
  const clock = deps.clock ?? systemClock
  const { engineTurns } = deps

  const answer = async (c: Context<EdgeEnv>, pathAppId?: string) => {
    const { params, principal } = await analystRequest(c, deps.control)
    const release = deps.limits.acquire(principal.apiKey)
    try {
      const query = parseChecked(() => parseQuery(params, pathAppId))
      await ownApps(deps.control, principal, query.appIds)
      const [first] = await readAppSettings(deps.store, query.appIds.slice(0, 1))
      const timeZone = first?.time_zone ?? 'UTC'
      const profiledbId = await profileDb(deps.control, principal.orgId, query)
      const compiled = compileQuery(query, { now: clock.now(), timeZone, profiledbId: profiledbId ?? 0 })
      const rows = await engineTurns.run(c.req.raw.signal, () =>
        runCapped(() => deps.reads.query<Record<string, unknown>>(compiled.sql, compiled.params)),
      )
      const { results, truncated } = resultRows(rows, compiled.columns, query.limit)
      if (wantsCsv(c.req.header('Accept'))) {
        c.header('Content-Type', 'text/csv; charset=utf-8')
        return c.body(
          resultCsv(
            compiled.columns.map((col) => col.name),
            results,
          ),
        )
      }
      const self = pathAppId === undefined ? '/v1/query' : `/v1/apps/${encodeURIComponent(pathAppId)}/query`
      const body = {
        results,
        query: queryEcho(query, timeZone, profiledbId, compiled),
        app_ids: query.appIds,
        comment: query.comment ?? null,
        created_at: new Date(clock.now()).toISOString(),
        truncated,
        _links: { self: { href: self }, root: { href: '/v1' } },
      }
      c.header('Content-Type', RESULT_SET_TYPE)
      return c.body(JSON.stringify(body))
    } finally {
      release()
    }
  }

  app.on(['GET', 'POST'], '/v1/query', (c) => answer(c))
  app.on(['GET', 'POST'], '/v1/apps/:app_id/query', (c) => answer(c, c.req.param('app_id')))
  return app
}

function parseChecked<T>(parse: () => T): T {
  try {
    return parse()
  } catch (err) {
    if (err instanceof QueryError) throw badRequest(err.message)
    throw err
  }
}

/** The profile db the profiles metric counts: the one named (of the key's org), else the org's. */
async function profileDb(
  control: ControlStore,
  orgId: number,
  query: ReturnType<typeof parseQuery>,
): Promise<number | undefined> {
  const wanted = query.metrics.some((m) => m.metric.kind === 'simple' && m.metric.metric === 'profiles')
  if (!wanted) return undefined
  if (query.profiledbId !== undefined) {
    const db = await control.getProfileDb(query.profiledbId)
    if (!db || db.org_id !== orgId)
      throw forbidden(`profile database ${query.profiledbId} is not accessible with this API key`)
    return db.id
  }
  const org = await control.getOrg(orgId)
  return org?.profiledb_id
}

/** Accept asks for CSV (`text/csv` named, before or without JSON). */
export function wantsCsv(accept: string | undefined): boolean {
  return accept !== undefined && /(^|,)\s*text\/csv\b/i.test(accept)
}

/**
 * The engine's refusals of a query that is too large for its caps (time, memory, rows) are the
 * analyst's to narrow: 400 naming the cap, never a 5xx.
 */
const CAP_ERRORS: [RegExp, string][] = [
  [/TIMEOUT_EXCEEDED|Timeout exceeded/i, 'the query took longer than the time limit'],
  [/MEMORY_LIMIT_EXCEEDED|Memory limit/i, 'the query needed more memory than the limit'],
  [/TOO_MANY_ROWS|TOO_MANY_BYTES|result size/i, 'the query read or returned more than the limit'],
]

async function runCapped<T>(run: () => Promise<T>): Promise<T> {
  try {
    return await run()
  } catch (err) {
    if (err instanceof SluiceError) throw err
    const text = err instanceof Error ? err.message : String(err)
    for (const [re, message] of CAP_ERRORS)
      if (re.test(text))
        throw new SluiceError('query_too_large', 400, `${message}: ask for fewer days, dimensions or apps`, {
          cause: err,
        })
    throw err
  }
}
