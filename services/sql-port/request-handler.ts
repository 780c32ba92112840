/**
 * One request of the SQL port from arrival to answer: the health checks and 404, the method, the
 * user, the body and parameters, then the statement to the port's execution and its result or error
 * back. A request whose client goes away is aborted (its statement is killed).
 */
import { randomUUID } from 'node:crypto'
import type { IncomingMessage, ServerResponse } from 'node:http'
import type { Logger } from '../shared/logger.ts'
import { authenticateRequest, type Authenticate } from './authentication.ts'
import { ErrorCode, fromEngineError, SqlPortError } from './clickhouse-protocol.ts'
import { sendError, sendNotFound, sendOk, sendResult, type ServerIdentity } from './http-answers.ts'
import { readBody, requestParams } from './http-request.ts'
import type { StatementExecution } from './statement-execution.ts'

export interface RequestHandlerOptions {
  execution: StatementExecution
  authenticate: Authenticate
  /** Refusals and failed statements at info, broken requests at warn. */
  logger?: Pick<Logger, 'info' | 'warn'>
  /** Largest accepted request body, before and after decompression. */
  maxBodyBytes: number
  /** Read when an answer is sent: its version and time zone may arrive after the port started. */
  server: ServerIdentity
}

export class RequestHandler {
  /** Requests in flight, aborted when the port closes. */
  private readonly inFlight = new Set<AbortController>()
  readonly listener: (req: IncomingMessage, res: ServerResponse) => void

  constructor(private readonly options: RequestHandlerOptions) {
    this.listener = (req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        // handle() answers every error it can; this is the last resort for a broken socket.
        this.options.logger?.warn({ err, component: 'sql-port' }, 'SQL port request failed')
        if (!res.headersSent) res.writeHead(500).end()
        else res.destroy(err instanceof Error ? err : undefined)
      })
    }
  }

  /** Cancels every request in flight (their statements are killed). */
  abortAll(): void {
    for (const controller of this.inFlight) controller.abort()
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const { server } = this.options
    // The response closing before it was all written means the client has gone.
    const abort = new AbortController()
    this.inFlight.add(abort)
    res.once('close', () => {
      this.inFlight.delete(abort)
      if (!res.writableFinished) abort.abort()
    })
    const started = process.hrtime.bigint()
    const url = new URL(req.url ?? '/', 'http://localhost')
    const method = req.method ?? 'GET'
    let queryId = headerSafe(url.searchParams.get('query_id')) ?? randomUUID()
    // Whether the request body has been read (or there is none to read) when an error is answered.
    let drained = method === 'GET' || method === 'HEAD'
    if (drained) req.resume()
    let user: string | undefined
    try {
      if (url.pathname === '/ping' || url.pathname === '/replicas_status') {
        if (method !== 'GET' && method !== 'HEAD')
          throw new SqlPortError(ErrorCode.NOT_IMPLEMENTED, `${method} is not supported here`)
        return sendOk(req, res)
      }
      if (method !== 'GET' && method !== 'POST' && method !== 'HEAD') {
        throw new SqlPortError(ErrorCode.NOT_IMPLEMENTED, `HTTP method ${method} is not supported`)
      }
      const isPost = method === 'POST'
      if (!isPost && !url.searchParams.has('query')) {
        if (url.pathname === '/') return sendOk(req, res)
        return sendNotFound(req, res, url.pathname)
      }

      user = authenticateRequest(req.headers, url.searchParams, this.options.authenticate)

      const raw = isPost ? await readBody(req, this.options.maxBodyBytes) : undefined
      drained = true
      const { http, body } = requestParams(url.searchParams, raw, req.headers['content-type'] ?? '')
      queryId = headerSafe(http.queryId) ?? queryId

      const result = await this.options.execution.execute(http, body, {
        isPost,
        user,
        headers: req.headers,
        signal: abort.signal,
      })
      const elapsedNs = process.hrtime.bigint() - started
      await sendResult(req, res, server, result, queryId, elapsedNs, http)
    } catch (err) {
      if (abort.signal.aborted || res.destroyed) return
      const portError = fromEngineError(err)
      // An analyst's refused or failing statement is not a fault of Sluice: info, with its code.
      this.options.logger?.info(
        { component: 'sql-port', query_id: queryId, user, code: portError.code, type: portError.type },
        portError.message,
      )
      sendError(req, res, server, portError, queryId, drained)
    }
  }
}

/** A query id that can be echoed in a response header as it is, or undefined. */
function headerSafe(value: string | null | undefined): string | undefined {
  return value && /^[\x20-\x7e]{1,256}$/.test(value) ? value : undefined
}
