import type { ErrorHandler, NotFoundHandler } from 'hono'
import { HTTPException } from 'hono/http-exception'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import { stdSerializers } from 'pino'
import type { Logger } from '../../shared/logger.ts'
import { SluiceError } from '../../shared/errors.ts'
import { REQUEST_ABORTED } from '../read-body.ts'

/** The edge's one error handler: every error body is {"error": message, "errors": [message]} (plus any extra fields). */
export function errorHandler(logger: Logger): ErrorHandler {
  return (err, c) => {
    const answer = errorAnswer(err, logger, c.req.method, c.req.path)
    for (const [name, value] of Object.entries(answer.headers)) c.header(name, value)
    return c.json(answer.body, answer.status as ContentfulStatusCode)
  }
}

/** An error's answer (status, headers, JSON body), logged as it deserves; for Hono and direct routes. */
export function errorAnswer(
  err: Error,
  logger: Logger,
  method: string,
  path: string,
): { status: number; headers: Record<string, string>; body: ReturnType<typeof errorBody> } {
  if (err instanceof SluiceError) {
    if (err.status >= 500) logServerError(logger, err, method, path)
    else if (err.code === REQUEST_ABORTED)
      logger.debug({ method, path }, 'client closed the request before its body arrived')
    return { status: err.status, headers: err.headers ?? {}, body: errorBody(err.message, err.extra) }
  }
  if (err instanceof HTTPException) {
    const status = err.status
    const message = status === 401 ? 'invalid credentials' : err.message || 'request failed'
    if (status >= 500) logServerError(logger, err, method, path)
    const headers: Record<string, string> =
      status === 401 ? { 'WWW-Authenticate': 'Basic realm="sluice"' } : {}
    return { status, headers, body: errorBody(message) }
  }
  logger.error({ err, path, method }, 'unhandled error')
  return { status: 500, headers: {}, body: errorBody('internal error') }
}

/**
 * A 5xx the edge answers on purpose is logged with the error underneath it (err.cause: the bus or
 * store failure), at error level. Load shedding (a 503 with Retry-After and no cause) is an answer
 * to overload, not a fault: it is logged at warn, so an overload does not flood the error log.
 */
function logServerError(logger: Logger, err: Error, method: string, path: string): void {
  const cause = err.cause instanceof Error ? stdSerializers.err(err.cause) : err.cause
  const fields = { err, cause, code: err instanceof SluiceError ? err.code : undefined, method, path }
  const shed = err instanceof SluiceError && err.retriable && err.cause === undefined
  if (shed) logger.warn(fields, err.message)
  else logger.error(fields, err.message)
}

export const notFoundHandler: NotFoundHandler = (c) => c.json(errorBody('not found'), 404)

/**
 * Every error body: `error` as the spec's APIs answer, and `errors` (the same message, in a list)
 * because real profile clients of the original service read that key (DESIGN.md).
 */
export function errorBody(message: string, extra?: Record<string, unknown>) {
  return { error: message, errors: [message], ...extra }
}
