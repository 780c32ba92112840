import { Hono, type Context } from 'hono'
import type { CappedReads } from '../../../pipelines/connectors/store/capped-reads.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import {
  readAppStats,
  readEventAttributes,
  readOrgApps,
  type AppRecordRow,
  type AppStats,
} from '../../../pipelines/query/app-stats.ts'
import { readAppSettings, type AppSettings } from '../../../pipelines/query/app-settings.ts'
import type { ControlStore } from '../../control/control-store.ts'
import type { ConcurrencyLimit } from '../../shared/concurrency-limit.ts'
import type { EdgeEnv } from '../env.ts'
import { analystRequest, ownApps } from '../query/analyst-request.ts'
import type { QueryKeyLimits } from '../query/key-limits.ts'

export const APP_TYPE = 'application/vnd.localytics.v1+hal+json;type=App'
export const ROOT_TYPE = 'application/vnd.localytics.v1+hal+json;type=Root'
export const ATTRIBUTES_TYPE = 'application/vnd.localytics.v1+hal+json;type=Attributes'

/** The parameters the templated query link of an app lists (as the original's). */
const QUERY_TEMPLATE = '{?app_id,metrics,dimensions,conditions,limit,order,days,comment,translate}'

export interface AppRouteDeps {
  control: ControlStore
  store: Store
  reads: CappedReads
  limits: QueryKeyLimits
  /** Shared with the Query API: reads running at once on this edge. */
  engineTurns: ConcurrencyLimit
}

/**
 * The Apps API (spec query-api.md "Apps"; docs/query-api.md): the key's org's apps with stats
 * computed from the stored data, one app with its icon and custom dimension labels, and the
 * attribute names of each event. Same credentials, scope and limits as the Query API; another
 * org's app is 403 like an unknown one.
 */
export function appRoutes(deps: AppRouteDeps) {
  const app = new Hono<EdgeEnv>()

  const guarded = async <T>(c: Context<EdgeEnv>, run: (orgId: number) => Promise<T>): Promise<T> => {
    const { principal } = await analystRequest(c, deps.control)
    const release = deps.limits.acquire(principal.apiKey)
    try {
      return await deps.engineTurns.run(c.req.raw.signal, () => run(principal.orgId))
    } finally {
      release()
    }
  }
  const hal = (c: Context<EdgeEnv>, type: string, body: unknown) => {
    c.header('Content-Type', type)
    return c.body(JSON.stringify(body))
  }

  const list = async (c: Context<EdgeEnv>) => {
    const body = await guarded(c, async (orgId) => {
      const apps = await readOrgApps(deps.store, orgId)
      const settings = await readAppSettings(
        deps.store,
        apps.map((a) => a.app_id),
      )
      const stats = await readAppStats(
        deps.reads,
        settings.map((s) => ({ app_id: s.app_id, time_zone: s.time_zone })),
      )
      return {
        _embedded: { apps: apps.map((a) => appEntry(a, stats.get(a.app_id))) },
        _links: { self: { href: '/v1/apps' }, root: { href: '/v1' } },
      }
    })
    return hal(c, APP_TYPE, body)
  }
  app.get('/v1/apps', list)
  app.get('/v1/apps/', list)

  // The HAL root the resources' `root` links point to: where the analysts' APIs start.
  const root = async (c: Context<EdgeEnv>) => {
    await analystRequest(c, deps.control)
    return hal(c, ROOT_TYPE, {
      _links: {
        self: { href: '/v1' },
        apps: { href: '/v1/apps' },
        query: { templated: true, href: `/v1/query${QUERY_TEMPLATE}` },
      },
    })
  }
  app.get('/v1', root)
  app.get('/v1/', root)

  app.get('/v1/apps/:app_id', async (c) => {
    const appId = c.req.param('app_id')
    const body = await guarded(c, async (orgId) => {
      await ownApps(deps.control, { orgId, apiKey: '', scopes: [] }, [appId])
      const [record] = await readOrgApps(deps.store, orgId, appId)
      const [settings] = await readAppSettings(deps.store, [appId])
      const stats = await readAppStats(deps.reads, [{ app_id: appId, time_zone: settings!.time_zone }])
      return appDetail(record ?? { app_id: appId, name: appId, created_at: 0 }, stats.get(appId), settings!)
    })
    return hal(c, APP_TYPE, body)
  })

  app.get('/v1/apps/:app_id/attributes', async (c) => {
    const appId = c.req.param('app_id')
    const body = await guarded(c, async (orgId) => {
      await ownApps(deps.control, { orgId, apiKey: '', scopes: [] }, [appId])
      return {
        events: await readEventAttributes(deps.reads, appId),
        _links: { app: { href: appHref(appId) }, root: { href: '/v1' } },
      }
    })
    return hal(c, ATTRIBUTES_TYPE, body)
  })

  return app
}

const appHref = (appId: string) => `/v1/apps/${encodeURIComponent(appId)}`

const NO_STATS: AppStats = {
  sessions: 0,
  closes: 0,
  users: 0,
  events: 0,
  data_points: 0,
  platforms: [],
  client_libraries: [],
  begin_date: null,
  end_date: null,
}

function appEntry(a: AppRecordRow, stats: AppStats | undefined) {
  const href = appHref(a.app_id)
  return {
    name: a.name,
    app_id: a.app_id,
    created_at: new Date(a.created_at).toISOString(),
    stats: stats ?? NO_STATS,
    _links: {
      self: { href },
      apps: { href: '/v1/apps' },
      query: { templated: true, href: `${href}/query${QUERY_TEMPLATE}` },
      attributes: { href: `${href}/attributes` },
      root: { href: '/v1' },
    },
  }
}

function appDetail(a: AppRecordRow, stats: AppStats | undefined, settings: AppSettings) {
  return {
    ...appEntry(a, stats),
    icon_url: settings.icon_url === '' ? null : settings.icon_url,
    custom_dimensions: settings.custom_dimensions,
    time_zone: settings.time_zone,
  }
}
