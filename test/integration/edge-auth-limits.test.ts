import type { Hono } from 'hono'
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { ControlStore } from '../../services/control/control-store.ts'
import { createEdgeApp } from '../../services/edge/app.ts'
import type { EdgeEnv } from '../../services/edge/env.ts'
import type { AuthFailureLimitOptions } from '../../services/edge/middleware/auth-failure-limit.ts'
import { edgeAreas, type RunningProcess } from '../../services/processes.ts'
import { createLogger } from '../../services/shared/logger.ts'
import { ADMIN_TOKEN, basic } from '../helpers/edge.ts'
import { startEdgeOnly, type EdgeOnly } from '../helpers/edge-only.ts'
import { manualClock } from '../helpers/manual-clock.ts'

// One engine per test file (chdb): an edge-only Sluice, whose routers also serve two apps driven
// through app.request() with an injected clock and made-up client addresses.
describe('the edge asks for credentials first and limits failed attempts and SDK uploads', () => {
  let edge: EdgeOnly | undefined
  let running: RunningProcess
  let good: Record<string, string>
  let wrongSecret: Record<string, string>
  let appKey: string
  let otherAppKey: string

  const appWith = (authFailureLimit?: AuthFailureLimitOptions): Hono<EdgeEnv> =>
    createEdgeApp({
      control: running.runtime.control,
      logger: createLogger('silent'),
      metrics: running.runtime.metrics,
      adminToken: ADMIN_TOKEN,
      readiness: [],
      isDraining: () => false,
      areas: edgeAreas(running.runtime, { adminToken: ADMIN_TOKEN }).routers,
      ...(authFailureLimit && { authFailureLimit }),
    })
  /** A request as the socket peer `address` (what @hono/node-server puts in the env). */
  const from = (app: Hono<EdgeEnv>, address: string, path: string, init: RequestInit = {}) =>
    app.request(path, init, { incoming: { socket: { remoteAddress: address } } })

  beforeAll(async () => {
    edge = await startEdgeOnly('auth-limits', {
      SLUICE_SDK_UPLOAD_RATE_PER_APP: '2',
      SLUICE_AUTH_FAILURES_PER_ADDRESS_PER_MIN: '3',
    })
    running = edge.running
    const control = running.runtime.control
    const org = await control.createOrg('limits')
    appKey = (await control.createApp(org.id, 'ios', 'limits-ios')).app_id
    otherAppKey = (await control.createApp(org.id, 'android', 'limits-android')).app_id
    const key = await control.createKey(org.id)
    good = basic(key.api_key, key.api_secret)
    wrongSecret = basic(key.api_key, 'not-the-secret')
  })
  afterAll(async () => {
    await edge?.close()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  describe('unknown paths under an API prefix', () => {
    const unknown = [
      ['GET', '/v0/nope'],
      ['POST', '/v0/uploads/extra/segments'],
      ['GET', '/v1/nope'],
      ['DELETE', '/v1/auth/check'],
      ['GET', '/v1/sdk/apps/limits-ios/nope'],
      ['POST', '/v2/nope'],
      ['GET', '/v2/push/app/reports'],
      ['GET', '/events/v1/nope'],
      ['GET', '/api/v6/nope'],
    ] as const

    it.each(unknown)(
      '%s %s answers 401 without credentials or with bad ones, 404 with good ones',
      async (method, path) => {
        const app = appWith()
        for (const headers of [{}, wrongSecret, basic('no-such-key', 'x'), { Authorization: 'Bearer x' }]) {
          const res = await app.request(path, { method, headers })
          expect(res.status).toBe(401)
          expect(res.headers.get('WWW-Authenticate')).toMatch(/^Basic /)
          expect(await res.json()).toEqual({ error: 'invalid credentials', errors: ['invalid credentials'] })
        }
        const res = await app.request(path, { method, headers: good })
        expect(res.status).toBe(404)
        expect(await res.json()).toEqual({ error: 'not found', errors: ['not found'] })
      },
    )

    it('under /admin/v1 it stays 401, and outside the API prefixes 404 without credentials', async () => {
      const app = appWith()
      const admin = await app.request('/admin/v1/nope')
      expect(admin.status).toBe(401)
      expect(await admin.json()).toEqual({ error: 'invalid admin token', errors: ['invalid admin token'] })
      for (const path of ['/nope', '/schemas/nope', '/v1x/nope', '/healthz/more']) {
        const res = await app.request(path)
        expect(res.status).toBe(404)
        expect(await res.json()).toEqual({ error: 'not found', errors: ['not found'] })
      }
    })

    it('health, readiness, metrics and schemas stay public; known routes answer as before', async () => {
      const app = appWith()
      expect(await (await app.request('/healthz')).json()).toEqual({ status: 'ok' })
      expect(await (await app.request('/readyz')).json()).toMatchObject({ status: 'ready' })
      expect(await (await app.request('/metrics')).text()).toMatch(/^# HELP sluice_/m)
      const schema = (await (await app.request('/schemas/events/v0.json')).json()) as { properties: object }
      expect(Object.keys(schema.properties)).toContain('event_name')
      expect(await (await app.request('/v1/auth/check', { headers: good })).json()).toMatchObject({
        scopes: expect.arrayContaining(['events']),
      })
      const profile = await app.request('/v1/profiles/nobody', { headers: good })
      expect(profile.status).toBe(404)
      expect(await profile.json()).toMatchObject({
        error: 'profile not found',
        errors: ['profile not found'],
      })
    })
  })

  describe('failed authentications per address', () => {
    const A = '198.51.100.1'
    const B = '198.51.100.2'
    const check = { path: '/v1/auth/check' }

    it('answers 429 after N failures from one address, to good credentials too, until the count refills', async () => {
      const clock = manualClock()
      const app = appWith({ perAddressPerMinute: 3, trustedProxies: [], clock })
      const statuses = async (address: string, headers: Record<string, string>, n = 1) => {
        const out: number[] = []
        for (let i = 0; i < n; i++) out.push((await from(app, address, check.path, { headers })).status)
        return out
      }
      expect(await statuses(A, wrongSecret, 3)).toEqual([401, 401, 401])
      const limited = await from(app, A, check.path, { headers: wrongSecret })
      expect(limited.status).toBe(429)
      expect(limited.headers.get('Retry-After')).toBe('20')
      expect(await limited.json()).toEqual({
        error: 'too many failed authentication attempts; retry later',
        errors: ['too many failed authentication attempts; retry later'],
      })
      // Good credentials from the same address: still 429, or a guesser could go on testing guesses.
      expect(await statuses(A, good)).toEqual([429])
      expect(await statuses(A, {})).toEqual([429])
      // The admin API's token is a secret like any other, behind the same limit.
      expect(
        (await from(app, A, '/admin/v1/orgs', { headers: { Authorization: `Bearer ${ADMIN_TOKEN}` } }))
          .status,
      ).toBe(429)
      // Other addresses are unaffected.
      expect(await statuses(B, good)).toEqual([200])
      expect(await statuses(B, wrongSecret)).toEqual([401])

      // A third of a minute later one failure may be made again (3 per minute).
      clock.advance(19_999)
      expect(await statuses(A, good)).toEqual([429])
      clock.advance(1)
      expect(await statuses(A, good)).toEqual([200])
      expect(await statuses(A, wrongSecret, 2)).toEqual([401, 429])
    })

    it('counts failures only: a busy client with good credentials and requests without credentials are never limited', async () => {
      const app = appWith({ perAddressPerMinute: 3, trustedProxies: [], clock: manualClock() })
      for (let i = 0; i < 50; i++)
        expect((await from(app, A, check.path, { headers: good })).status).toBe(200)
      for (let i = 0; i < 10; i++) expect((await from(app, B, check.path)).status).toBe(401)
      expect((await from(app, B, check.path, { headers: good })).status).toBe(200)
    })

    it('counts unknown keys, unknown paths with bad credentials and wrong admin tokens alike', async () => {
      const app = appWith({ perAddressPerMinute: 3, trustedProxies: [], clock: manualClock() })
      expect((await from(app, A, check.path, { headers: basic('no-such-key', 'x') })).status).toBe(401)
      expect((await from(app, A, '/v2/nope', { headers: wrongSecret })).status).toBe(401)
      expect(
        (await from(app, A, '/admin/v1/orgs', { headers: { Authorization: 'Bearer wrong-token' } })).status,
      ).toBe(401)
      expect((await from(app, A, check.path, { headers: good })).status).toBe(429)
    })

    it('believes X-Forwarded-For only from a trusted proxy', async () => {
      const app = appWith({ perAddressPerMinute: 1, trustedProxies: ['10.0.0.0/8'], clock: manualClock() })
      const via = (peer: string, forwardedFor: string, headers: Record<string, string>) =>
        from(app, peer, check.path, { headers: { ...headers, 'X-Forwarded-For': forwardedFor } })
      expect((await via('10.0.0.5', A, wrongSecret)).status).toBe(401)
      // The same client through another proxy instance: the same address, now over the limit.
      expect((await via('10.0.0.6', A, good)).status).toBe(429)
      // Another client behind the same proxy is not.
      expect((await via('10.0.0.5', B, good)).status).toBe(200)
      // An untrusted peer cannot claim to be somebody else, nor shed its own failures.
      expect((await via('203.0.113.9', B, wrongSecret)).status).toBe(401)
      expect((await via('203.0.113.9', '192.0.2.77', good)).status).toBe(429)
      expect((await via('10.0.0.5', B, good)).status).toBe(200)
    })

    it('an IPv6 client counts by its /64', async () => {
      const app = appWith({ perAddressPerMinute: 1, trustedProxies: [], clock: manualClock() })
      expect((await from(app, '2001:db8:1:2::1', check.path, { headers: wrongSecret })).status).toBe(401)
      expect((await from(app, '2001:db8:1:2::ffff', check.path, { headers: good })).status).toBe(429)
      expect((await from(app, '2001:db8:1:3::1', check.path, { headers: good })).status).toBe(200)
    })
  })

  describe('the key cache', () => {
    /** The edge's store, counting the look-ups that reach the engine. */
    const countingStore = () => {
      const store = running.runtime.store
      let queries = 0
      const counted: Store = {
        kind: store.kind,
        command: (sql, params) => store.command(sql, params),
        query: (sql, params) => {
          queries++
          return store.query(sql, params)
        },
        insert: (table, rows, options) => store.insert(table, rows, options),
        queryStream: (sql, params, format) => store.queryStream(sql, params, format),
        ping: () => store.ping(),
        close: () => Promise.resolve(),
      }
      return { store: counted, queries: () => queries }
    }

    it('merges concurrent look-ups of one key into one query, found or not', async () => {
      const { store, queries } = countingStore()
      const control = new ControlStore(store, 5000, { clock: manualClock() })
      const org = await running.runtime.control.createOrg('merge')
      const { api_key } = await running.runtime.control.createKey(org.id)
      const found = await Promise.all(Array.from({ length: 20 }, () => control.getKey(api_key)))
      expect(new Set(found.map((k) => k?.org_id))).toEqual(new Set([org.id]))
      expect(queries()).toBe(1)
      const missing = await Promise.all(Array.from({ length: 20 }, () => control.getKey('no-such-key')))
      expect(missing).toEqual(Array.from({ length: 20 }, () => undefined))
      expect(queries()).toBe(2)
      // An id longer than any key or app id is unknown without a query.
      expect(await control.getKey('k'.repeat(129))).toBeUndefined()
      expect(await control.getApp('a'.repeat(129))).toBeUndefined()
      expect(queries()).toBe(2)
    })

    it('a revoked key stops at once on the edge that revoked it, and on another edge once the TTL has passed', async () => {
      const clock = manualClock()
      const otherEdge = new ControlStore(running.runtime.store, 5000, { clock })
      const org = await running.runtime.control.createOrg('revoke')
      const key = await running.runtime.control.createKey(org.id)
      const app = appWith()
      const auth = basic(key.api_key, key.api_secret)
      expect((await app.request('/v1/auth/check', { headers: auth })).status).toBe(200)
      expect((await otherEdge.getKey(key.api_key))?.revoked).toBe(false)

      expect(await running.runtime.control.revokeKey(org.id, key.api_key)).toBe(true)
      expect((await app.request('/v1/auth/check', { headers: auth })).status).toBe(401)
      clock.advance(5000)
      expect((await otherEdge.getKey(key.api_key))?.revoked).toBe(false)
      clock.advance(1)
      expect((await otherEdge.getKey(key.api_key))?.revoked).toBe(true)
    })
  })

  describe('over HTTP, as configured', () => {
    const sdkUpload = (app: string) =>
      fetch(`${running.url!}/v1/sdk/apps/${app}/uploads`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: '{"type":"s"}\n',
      })

    it('SDK uploads past the per-app rate answer 429 with Retry-After; other apps are unaffected', async () => {
      // Time stands still while the uploads are sent, so no token comes back mid-test.
      vi.useFakeTimers({ toFake: ['Date'] })
      const statuses: number[] = []
      let limited: Response | undefined
      for (let i = 0; i < 4; i++) {
        const res = await sdkUpload(appKey)
        statuses.push(res.status)
        if (res.status === 429) limited = res
        else expect(await res.json()).toEqual({ transaction_id: expect.any(String) })
      }
      expect(statuses).toEqual([202, 202, 429, 429])
      expect(limited?.headers.get('Retry-After')).toBe('1')
      expect(await limited?.json()).toEqual({ error: 'rate limit exceeded', errors: ['rate limit exceeded'] })
      expect((await sdkUpload(otherAppKey)).status).toBe(202)
    })

    it('the socket address is limited after SLUICE_AUTH_FAILURES_PER_ADDRESS_PER_MIN failures', async () => {
      vi.useFakeTimers({ toFake: ['Date'] })
      const checkAuth = (headers: Record<string, string>) =>
        fetch(`${running.url!}/v1/auth/check`, { headers })
      const statuses: number[] = []
      for (let i = 0; i < 4; i++) statuses.push((await checkAuth(wrongSecret)).status)
      expect(statuses).toEqual([401, 401, 401, 429])
      const limited = await checkAuth(good)
      expect(limited.status).toBe(429)
      expect(limited.headers.get('Retry-After')).toBe('20')
      // SDK uploads carry no secret and are not behind this limit.
      vi.setSystemTime(Date.now() + 1000)
      expect((await sdkUpload(appKey)).status).toBe(202)
    })
  })
})
