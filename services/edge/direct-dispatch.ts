import { IncomingMessage, type ServerResponse } from 'node:http'
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2'
import type { Scope } from '../../schemas/admin.ts'
import type { ControlStore } from '../control/control-store.ts'
import type { Logger } from '../shared/logger.ts'
import type { Principal } from './env.ts'
import { authenticate, rememberedPrincipal, type ConnectionAuth } from './middleware/api-auth.ts'
import type { AuthFailureLimit } from './middleware/auth-failure-limit.ts'
import { errorAnswer } from './middleware/errors.ts'
import type { HttpRequestMetrics } from './middleware/metrics.ts'
import type { HttpsCheck } from './middleware/require-https.ts'
import { readIncomingBody, type BodyMemory } from './read-body.ts'
import type { UploadRequest } from './upload-body.ts'

/**
 * A route the edge serves straight off Node's request, before Hono's dispatch: the server-side
 * upload, the one path taken thousands of times a second. Through Hono each request became a web
 * Request, a Context, a chain of async middleware and a Response the adaptor copied back onto
 * Node's response: ~10 % of the main thread's time per plain upload and ~9 KB of its garbage
 * (measured at `249935e`; docs/performance.md, "Edge"). The same route stays registered in Hono,
 * which serves it to `app.request()`, over HTTP/2, and under any spelling or request this table
 * does not take.
 */
export interface DirectRoute {
  method: string
  /** Exact request targets: a query string or a trailing slash goes to Hono. */
  paths: readonly string[]
  /** Whether this request is one the route takes directly (by its headers); absent: all are. */
  takes?: (request: Pick<UploadRequest, 'header'>) => boolean
  /** The scope the API key needs (apiAuth's). */
  scope: Scope
  /** The route's work once its caller is authenticated: the JSON answer, or a thrown SluiceError. */
  handle(request: UploadRequest, principal: Principal): Promise<{ status: number; body: unknown }>
}

/** What runs around every direct route: the edge middleware's checks, in Hono's order. */
export interface DirectDispatchDeps {
  routes: readonly DirectRoute[]
  control: ControlStore
  logger: Logger
  requests: HttpRequestMetrics
  /** The plain-HTTP policy (requireHttps); absent: plain HTTP is answered. */
  https?: HttpsCheck
  /** The per-address limit on failed authentications, shared with Hono's routes. */
  authFailures?: AuthFailureLimit
}

/** Serves the request if it is a direct route's (true), else leaves it untouched (false). */
export type DirectDispatch = (
  req: IncomingMessage | Http2ServerRequest,
  res: ServerResponse | Http2ServerResponse,
) => boolean

/**
 * An unread body up to this size is read and discarded by Node so the connection can carry the
 * next request (what Hono's adaptor does too); a larger or unsized one closes the connection.
 */
const DRAIN_LIMIT_BYTES = 1024 * 1024

/** The dispatch over `deps.routes`, or undefined when there are none. */
export function directDispatch(deps: DirectDispatchDeps): DirectDispatch | undefined {
  // By path first: the request's own strings are looked up as they are, with nothing built per request.
  const routes = new Map<string, DirectRoute[]>()
  for (const route of deps.routes)
    for (const path of route.paths) routes.set(path, [...(routes.get(path) ?? []), route])
  if (routes.size === 0) return undefined
  return (req, res) => {
    // HTTP/2 streams stay with Hono's adaptor, which closes a stream whose body went unread.
    if (!(req instanceof IncomingMessage)) return false
    const route = routes.get(req.url!)?.find((r) => r.method === req.method)
    if (!route) return false
    const request = new NodeUploadRequest(req)
    if (route.takes && !route.takes(request)) return false
    void serve(deps, route, req, res as ServerResponse, request)
    return true
  }
}

async function serve(
  deps: DirectDispatchDeps,
  route: DirectRoute,
  req: IncomingMessage,
  res: ServerResponse,
  request: UploadRequest,
): Promise<void> {
  const started = performance.now()
  const path = req.url!
  // Hono labels a request its '*' middleware refused with that middleware's pattern.
  let label = '/*'
  let answer: { status: number; headers: Record<string, string>; body: unknown }
  try {
    deps.https?.(path, req.socket, () => headerOf(req, 'x-forwarded-proto'))
    label = path
    const attempts = deps.authFailures?.attempts(req.socket.remoteAddress, () =>
      headerOf(req, 'x-forwarded-for'),
    )
    attempts?.check()
    const connection = connectionAuth(req.socket)
    const authorization = req.headers.authorization
    // authenticate() repeats the two checks above (both only read) before the full one, which
    // runs only when the connection does not remember this very header.
    const principal =
      rememberedPrincipal(deps.control, authorization, route.scope, connection) ??
      (await authenticate(deps.control, authorization, attempts, route.scope, connection))
    const { status, body } = await route.handle(request, principal)
    answer = { status, headers: {}, body }
  } catch (err) {
    answer = errorAnswer(err instanceof Error ? err : new Error(String(err)), deps.logger, req.method!, path)
  }
  send(req, res, answer)
  deps.requests.record(req.method!, label, answer.status, (performance.now() - started) / 1000)
}

function send(
  req: IncomingMessage,
  res: ServerResponse,
  answer: { status: number; headers: Record<string, string>; body: unknown },
): void {
  if (res.headersSent || res.destroyed) return
  const text = JSON.stringify(answer.body)
  const headers: Record<string, string | number> = {
    ...answer.headers,
    'Content-Type': 'application/json',
    'Content-Length': Buffer.byteLength(text),
  }
  if (!keepsConnection(req)) headers.Connection = 'close'
  try {
    res.writeHead(answer.status, headers)
    res.end(text)
  } catch (err) {
    // A header value Node refuses: nothing more can be said on this connection.
    res.destroy(err instanceof Error ? err : undefined)
  }
}

/**
 * Whether the connection can carry another request after this answer: the body was read whole,
 * or nobody started reading it and Node will discard it (bounded by DRAIN_LIMIT_BYTES).
 */
function keepsConnection(req: IncomingMessage): boolean {
  if (req.complete) return true
  if (req.readableFlowing !== null) return false
  // No Content-Length and no Transfer-Encoding: an HTTP/1.1 request without a body.
  const declared = req.headers['transfer-encoding'] ? NaN : Number(req.headers['content-length'] ?? 0)
  return Number.isFinite(declared) && declared <= DRAIN_LIMIT_BYTES
}

// Per connection (its socket), for as long as it is open: what authenticate() remembers on it.
const connections = new WeakMap<object, ConnectionAuth>()

function connectionAuth(socket: object): ConnectionAuth {
  let auth = connections.get(socket)
  if (!auth) connections.set(socket, (auth = {}))
  return auth
}

/**
 * The upload checks' view of a Node request. A class, not an object of arrow functions: run by
 * tsx, each named closure made per request was also given its name (esbuild's keepNames, an
 * Object.defineProperty per closure, ~0.3 µs each).
 */
class NodeUploadRequest implements UploadRequest {
  constructor(private readonly req: IncomingMessage) {}

  header(lowerCaseName: string): string | undefined {
    return headerOf(this.req, lowerCaseName)
  }

  readBody(limit: number, memory?: BodyMemory): Promise<Buffer> {
    return readIncomingBody(this.req, limit, memory)
  }
}

/** A header's value as Hono's `c.req.header` gives it: repeated headers joined by ', '. */
function headerOf(req: IncomingMessage, lowerCaseName: string): string | undefined {
  const value = req.headers[lowerCaseName]
  return Array.isArray(value) ? value.join(', ') : value
}
