import { IncomingMessage, type ServerResponse } from 'node:http'
import { Socket } from 'node:net'
import { describe, expect, it } from 'vitest'
import type { ControlStore } from '../../services/control/control-store.ts'
import { hashSecret } from '../../services/control/credentials.ts'
import { directDispatch, type DirectRoute } from '../../services/edge/direct-dispatch.ts'
import { AuthFailureLimit } from '../../services/edge/middleware/auth-failure-limit.ts'
import { HttpRequestMetrics } from '../../services/edge/middleware/metrics.ts'
import { httpsCheck } from '../../services/edge/middleware/require-https.ts'
import { createLogger } from '../../services/shared/logger.ts'
import { createMetrics } from '../../services/shared/metrics.ts'

// What the dispatch takes and what it runs around a direct route, on Node's own request objects
// (the peer address is what a real socket cannot give a test: another machine's).

const KEY = { api_key: 'k1', secret: 's1' }
const control = {
  getKey: async (apiKey: string) =>
    apiKey === KEY.api_key
      ? {
          api_key: KEY.api_key,
          org_id: 7,
          secret_hash: hashSecret(KEY.api_key, KEY.secret),
          scopes: ['events'],
          revoked: false,
        }
      : undefined,
  // Nothing cached: every request takes getKey's path.
  cachedKey: () => undefined,
} as unknown as ControlStore
const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`

function request(init: {
  method?: string
  url?: string
  peer?: string
  headers?: Record<string, string>
  body?: string
  /** The connection it arrives on (a new one when absent). */
  socket?: Socket
}) {
  const socket = init.socket ?? new Socket()
  if (!init.socket) Object.defineProperty(socket, 'remoteAddress', { value: init.peer ?? '127.0.0.1' })
  const req = new IncomingMessage(socket)
  req.method = init.method ?? 'POST'
  req.url = init.url ?? '/v0/uploads'
  req.httpVersionMajor = 1
  req.headers = { 'content-length': String(init.body?.length ?? 0), ...init.headers }
  // As Node's parser does once the body has arrived whole.
  req.once('end', () => (req.complete = true))
  if (init.body) req.push(init.body)
  req.push(null)
  return req
}

/** A response that keeps what was written. */
function response() {
  const written: { status?: number; headers?: Record<string, string | number>; body?: string } = {}
  let finish: () => void
  const done = new Promise<void>((resolve) => (finish = resolve))
  const res = {
    headersSent: false,
    destroyed: false,
    writeHead(status: number, headers: Record<string, string | number>) {
      written.status = status
      written.headers = headers
    },
    end(body: string) {
      written.body = body
      finish()
    },
  }
  return { res: res as unknown as ServerResponse, written, done }
}

function setup(options: { https?: boolean; limit?: AuthFailureLimit; control?: ControlStore } = {}) {
  const handled: { body: string; orgId: number }[] = []
  const route: DirectRoute = {
    method: 'POST',
    paths: ['/v0/uploads'],
    scope: 'events',
    async handle(req, principal) {
      const body = (await req.readBody(1024)).toString()
      handled.push({ body, orgId: principal.orgId })
      return { status: 202, body: { got: body.length } }
    },
  }
  const metrics = createMetrics()
  const dispatch = directDispatch({
    routes: [route],
    control: options.control ?? control,
    logger: createLogger('silent'),
    requests: new HttpRequestMetrics(metrics),
    ...(options.https && { https: httpsCheck({ trustedProxies: [], allowPlainHttp: false }) }),
    ...(options.limit && { authFailures: options.limit }),
  })!
  return { dispatch, handled, metrics }
}

describe('directDispatch', () => {
  it('takes only its exact method and paths over HTTP/1; the rest is left to Hono', () => {
    const { dispatch } = setup()
    for (const init of [
      { url: '/v0/uploads?x=1' },
      { url: '/v0/uploads/' },
      { method: 'GET' },
      { url: '/v1/uploads' },
    ]) {
      const { res } = response()
      expect(dispatch(request(init), res)).toBe(false)
    }
    // HTTP/2's compatibility request is not an http.IncomingMessage.
    const http2 = { method: 'POST', url: '/v0/uploads', httpVersionMajor: 2, headers: {} }
    expect(dispatch(http2 as unknown as IncomingMessage, response().res)).toBe(false)
  })

  it('leaves to Hono a request the route does not take by its headers', () => {
    const metrics = createMetrics()
    const dispatch = directDispatch({
      routes: [
        {
          method: 'POST',
          paths: ['/v0/uploads'],
          scope: 'events',
          takes: (request) => request.header('content-type') === 'application/json',
          handle: async () => ({ status: 202, body: {} }),
        },
      ],
      control,
      logger: createLogger('silent'),
      requests: new HttpRequestMetrics(metrics),
    })!
    expect(dispatch(request({ headers: { 'content-type': 'application/x-gzip' } }), response().res)).toBe(
      false,
    )
    expect(dispatch(request({ headers: { 'content-type': 'application/json' } }), response().res)).toBe(true)
  })

  it('authenticates, runs the route with its principal, and answers its JSON', async () => {
    const { dispatch, handled, metrics } = setup()
    const { res, written, done } = response()
    expect(dispatch(request({ headers: { authorization: basic('k1', 's1') }, body: 'hello' }), res)).toBe(
      true,
    )
    await done
    expect(written.status).toBe(202)
    expect(JSON.parse(written.body!)).toEqual({ got: 5 })
    expect(written.headers).toMatchObject({ 'Content-Type': 'application/json', 'Content-Length': 9 })
    expect(written.headers).not.toHaveProperty('Connection')
    expect(handled).toEqual([{ body: 'hello', orgId: 7 }])
    const text = await metrics.registry.metrics()
    expect(text).toMatch(/sluice_http_requests_total\{method="POST",route="\/v0\/uploads",status="202"\} 1/)
  })

  it('refuses plain HTTP from another machine before credentials, labelled as Hono labels it', async () => {
    const { dispatch, handled, metrics } = setup({ https: true })
    const { res, written, done } = response()
    dispatch(request({ peer: '203.0.113.9', headers: { authorization: basic('k1', 's1') }, body: 'x' }), res)
    await done
    expect(written.status).toBe(403)
    expect((JSON.parse(written.body!) as { error: string }).error).toMatch(/^plain HTTP is refused/)
    expect(handled).toEqual([])
    expect(await metrics.registry.metrics()).toMatch(/route="\/\*",status="403"\} 1/)
  })

  it('closes the connection when it answers before reading a body it cannot discard cheaply', async () => {
    const { dispatch } = setup()
    const { res, written, done } = response()
    // Unauthenticated, chunked (no length): Node would read it to the end to keep the connection.
    dispatch(request({ headers: { 'transfer-encoding': 'chunked' }, body: 'x' }), res)
    await done
    expect(written.status).toBe(401)
    expect(written.headers).toMatchObject({ Connection: 'close' })
  })

  it('counts failed authentications in the limit it shares with Hono, and then refuses good ones too', async () => {
    const limit = new AuthFailureLimit({ perAddressPerMinute: 2, trustedProxies: [] })
    const { dispatch, handled } = setup({ limit })
    const statuses: number[] = []
    for (const password of ['bad', 'bad', 's1']) {
      const { res, written, done } = response()
      dispatch(
        request({ peer: '198.51.100.4', headers: { authorization: basic('k1', password) }, body: 'x' }),
        res,
      )
      await done
      statuses.push(written.status!)
    }
    expect(statuses).toEqual([401, 401, 429])
    expect(handled).toEqual([])
    // The same limit, asked as Hono's middleware asks it, holds the address too.
    expect(() => limit.attempts('198.51.100.4', () => undefined).check()).toThrow(/too many failed/)
  })

  it('remembers the credentials a connection had verified, and honours a revoked key or a new secret at once', async () => {
    // A key as the control store's cache holds it now: revoked or given a new secret between requests.
    const key = {
      api_key: 'k1',
      org_id: 7,
      secret_hash: hashSecret('k1', 's1'),
      scopes: ['events'],
      revoked: false,
    }
    const cached = { getKey: async () => key, cachedKey: () => ({ value: key }) } as unknown as ControlStore
    const { dispatch, handled } = setup({ control: cached })
    const connection = new Socket()
    Object.defineProperty(connection, 'remoteAddress', { value: '127.0.0.1' })
    const send = async (password: string, socket = connection) => {
      const { res, written, done } = response()
      dispatch(request({ socket, headers: { authorization: basic('k1', password) }, body: 'x' }), res)
      await done
      return written.status
    }
    expect(await send('s1')).toBe(202)
    expect(await send('s1')).toBe(202)
    // Another header on the same connection is checked in full, and does not displace the one remembered.
    expect(await send('s2')).toBe(401)
    expect(await send('s1')).toBe(202)
    key.revoked = true
    expect(await send('s1')).toBe(401)
    key.revoked = false
    key.secret_hash = hashSecret('k1', 's2')
    expect(await send('s1')).toBe(401)
    expect(await send('s2')).toBe(202)
    expect(await send('s2', new Socket())).toBe(202)
    expect(handled.map((h) => h.orgId)).toEqual([7, 7, 7, 7, 7])
  })
})
