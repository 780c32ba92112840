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
    if (err instanceof SluiceError) {
      if (err.status >= 500) logServerError(logger, err, c.req.method, c.req.path)
      else if (err.code === REQUEST_ABORTED)
        logger.debug(
          { method: c.req.method, path: c.req.path },
          'client closed the request before its body arrived',
        )
      for (const [name, value] of Object.entries(err.headers ?? {})) c.header(name, value)
      return c.json(errorBody(err.message, err.extra), err.status as ContentfulStatusCode)
    }
    if (err instanceof HTTPException) {
      const status = err.status
      const message = status === 401 ? 'invalid credentials' : err.message || 'request failed'
      if (status === 401) c.header('WWW-Authenticate', 'Basic realm="sluice"')
      if (status >= 500) logServerError(logger, err, c.req.method, c.req.path)
      return c.json(errorBody(message), status)
    }
    logger.error({ err, path: c.req.path, method: c.req.method }, 'unhandled error')
    return c.json(errorBody('internal error'), 500)
  }
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
