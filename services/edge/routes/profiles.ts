import { Hono, type Context } from 'hono'
import type { Bus } from '../../../pipelines/connectors/bus/bus.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import type { App, ControlStore, Org } from '../../control/control-store.ts'
import { TtlCache } from '../../control/ttl-cache.ts'
import { encodeCommand, type ProfileCommand } from '../../../pipelines/profiles/commands.ts'
import { PendingWrites, type PendingWrite } from '../profiles/pending-writes.ts'
import {
  customersByEmail,
  readCustomers,
  readProfile,
  type AppRef,
  type OrgScope,
} from '../../../pipelines/profiles/profile-reader.ts'
import { validatePatch } from '../../../pipelines/profiles/validate-changes.ts'
import { customerIdParam, emailLookupQuery, PROFILE_LIMITS } from '../../../schemas/profiles.ts'
import { badRequest, forbidden, notFound, SluiceError, tooManyRequests } from '../../shared/errors.ts'
import type { Metrics } from '../../shared/metrics.ts'
import type { EdgeEnv } from '../env.ts'
import { apiAuth } from '../middleware/api-auth.ts'
import { rateLimit, TokenBuckets } from '../middleware/rate-limit.ts'
import { readBoundedBody } from '../read-body.ts'
import { parseJsonBody, requireJsonContentType } from '../json-request.ts'
import { formatIssues, parseParam } from '../validate.ts'

export interface ProfileRouteDeps {
  bus: Bus
  store: Store
  control: ControlStore
  /** The profile-changes topic. */
  topic: string
  metrics: Metrics
  limits: { perKeyPerMinute: number; perCustomerPerMinute: number; maxBodyBytes?: number }
  /** How long a read waits for this edge's own accepted writes of it to be applied (default 2 s). */
  readYourWritesMs?: number
}

/** A look-up by e-mail waits for at most this many of the edge's pending writes. */
const MAX_AWAITED_WRITES = 1000

type Ctx = Context<EdgeEnv>

/**
 * The profile store: `GET|PATCH|POST|DELETE /v1/profiles/:customer_id` (org level), the same under
 * `/v1/apps/:app_key/profiles/:customer_id` (app level), and the customer look-ups under
 * `/v1/customers`. Writes are validated here and handed to the bus as one record per request,
 * keyed by profile db + customer, so the profile writer applies each customer's requests in the
 * order they were accepted; the 202 means the request is durable. A read waits (boundedly) for
 * the writes this edge accepted for it to be applied, so a client sees its own writes.
 */
export function profileRoutes(deps: ProfileRouteDeps) {
  const app = new Hono<EdgeEnv>()
  const perKey = new TokenBuckets(deps.limits.perKeyPerMinute, 60_000)
  const perCustomer = new TokenBuckets(deps.limits.perCustomerPerMinute, 60_000)
  // An org's profile db never changes, so its id can be cached for long.
  const orgs = new TtlCache<Org | undefined>(60_000)
  const maxBodyBytes = deps.limits.maxBodyBytes ?? PROFILE_LIMITS.maxBodyBytes
  const pending = new PendingWrites()
  const readYourWrites = async (writes: PendingWrite[]) => {
    if (writes.length > 0) await pending.waitApplied(deps.store, writes, deps.readYourWritesMs ?? 2000)
  }

  const guard = [
    apiAuth(deps.control, 'profiles'),
    rateLimit(
      perKey,
      (c) => c.get('principal').apiKey,
      `rate limit of ${deps.limits.perKeyPerMinute} requests per minute for this API key exceeded; retry later`,
    ),
  ] as const

  const orgScope = async (c: Ctx): Promise<OrgScope> => {
    const orgId = c.get('principal').orgId
    const org = await orgs.get(String(orgId), () => deps.control.getOrg(orgId))
    if (!org) throw forbidden('the organization of this API key no longer exists')
    return { orgId, orgDb: org.profiledb_id }
  }

  // An unknown app key answers like another org's app: a key never learns which app keys exist.
  const appOf = async (c: Ctx, appKey: string): Promise<App> => {
    const found = await deps.control.getApp(appKey)
    if (!found || found.org_id !== c.get('principal').orgId)
      throw forbidden(`app ${appKey} does not belong to this organization`)
    return found
  }

  const customerOf = (c: Ctx): string =>
    parseParam(customerIdParam, c.req.param('customer_id'), 'customer_id')

  /** 15 requests per minute per customer and profile db: counted on requests that would change it. */
  const takeCustomerToken = (db: number, customer: string) => {
    const wait = perCustomer.take(`${db}:${customer}`)
    if (wait > 0)
      throw tooManyRequests(
        wait,
        `rate limit of ${deps.limits.perCustomerPerMinute} requests per minute for this customer exceeded; ` +
          'combine the updates of one customer in one request',
      )
  }

  const produce = async (command: ProfileCommand) => {
    try {
      await deps.bus.produce(deps.topic, [encodeCommand(command)])
    } catch (err) {
      // Nothing was promised yet: the client retries.
      throw new SluiceError('bus_unavailable', 503, 'could not store the change durably; retry', {
        retriable: true,
        headers: { 'Retry-After': '1' },
        cause: err,
      })
    }
    deps.metrics.busProduced.inc({ topic: deps.topic })
  }

  const patch = async (c: Ctx, target: App | undefined) => {
    const org = await orgScope(c)
    const customer = customerOf(c)
    requireJsonContentType(c.req.header('Content-Type'))
    const body = parseJsonBody(await readBoundedBody(c.req.raw, maxBodyBytes))
    const result = validatePatch(body, target ? 'app' : 'org')
    if (result.kind === 'malformed') throw badRequest(result.reason)
    if (result.kind === 'none-valid') throw badRequest(result.reason, { ignored_changes: result.ignored })
    const db = target ? target.profiledb_id : org.orgDb
    takeCustomerToken(db, customer)
    await pending.write({ db, customer }, (receivedAt) =>
      produce({
        v: 1,
        op: 'patch',
        org: org.orgId,
        db,
        app: target?.app_id ?? '',
        customer,
        receivedAt,
        changes: result.changes,
      }),
    )
    return c.json({ ignored_changes: result.ignored }, 202)
  }

  const remove = async (c: Ctx, target: App | undefined) => {
    const org = await orgScope(c)
    const customer = customerOf(c)
    const db = target ? target.profiledb_id : org.orgDb
    takeCustomerToken(db, customer)
    // Through the bus like a PATCH, so it is ordered with the customer's other requests.
    await pending.write({ db, customer }, (receivedAt) =>
      produce({
        v: 1,
        op: 'delete-profile',
        org: org.orgId,
        db,
        app: target?.app_id ?? '',
        customer,
        receivedAt,
      }),
    )
    return c.body(null, 204)
  }

  const read = async (c: Ctx, target: App | undefined) => {
    const org = await orgScope(c)
    const customer = customerOf(c)
    const ref: AppRef | undefined = target && { app_id: target.app_id, profiledb_id: target.profiledb_id }
    await readYourWrites(pending.pendingFor([{ db: ref ? ref.profiledb_id : org.orgDb, customer }]))
    const profile = await readProfile(deps.store, org, ref, customer)
    if (!profile) throw notFound('profile not found')
    return c.json(profile)
  }

  const orgPath = '/v1/profiles/:customer_id'
  app.get(orgPath, ...guard, (c) => read(c, undefined))
  app.patch(orgPath, ...guard, (c) => patch(c, undefined))
  app.post(orgPath, ...guard, (c) => patch(c, undefined))
  app.delete(orgPath, ...guard, (c) => remove(c, undefined))

  const appPath = '/v1/apps/:app_key/profiles/:customer_id'
  const withApp = (handler: (c: Ctx, target: App) => Promise<Response>) => async (c: Ctx) =>
    handler(c, await appOf(c, c.req.param('app_key') ?? ''))
  app.get(appPath, ...guard, withApp(read))
  app.patch(appPath, ...guard, withApp(patch))
  app.post(appPath, ...guard, withApp(patch))
  app.delete(appPath, ...guard, withApp(remove))

  app.get('/v1/customers/:customer_id', ...guard, async (c) => {
    const org = await orgScope(c)
    const customer = customerOf(c)
    const apps = await deps.control.listApps(org.orgId)
    const dbs = [org.orgDb, ...apps.map((a) => a.profiledb_id)]
    await readYourWrites(pending.pendingFor(dbs.map((db) => ({ db, customer }))))
    const [found] = await readCustomers(deps.store, org, apps, [customer])
    if (!found) throw notFound('customer not found')
    return c.json(found)
  })

  app.get('/v1/customers', ...guard, async (c) => {
    const org = await orgScope(c)
    const query = emailLookupQuery.safeParse(c.req.query())
    if (!query.success) throw badRequest(formatIssues(query.error.issues))
    const apps: AppRef[] = []
    for (const appKey of query.data.app_ids) apps.push(await appOf(c, appKey))
    const dbs = [org.orgDb, ...apps.map((a) => a.profiledb_id)]
    await readYourWrites(pending.pendingInDbs(dbs).slice(-MAX_AWAITED_WRITES))
    const customers = await customersByEmail(deps.store, org.orgDb, query.data.email)
    return c.json({ customers: await readCustomers(deps.store, org, apps, customers) })
  })

  return app
}
