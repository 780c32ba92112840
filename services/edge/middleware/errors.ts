import type { ErrorHandler, NotFoundHandler } from 'hono'
import { HTTPException } from 'hono/http-exception'
import type { ContentfulStatusCode } from 'hono/utils/http-status'
import type { Logger } from '../../shared/logger.ts'
import { SluiceError } from '../../shared/errors.ts'

/** The edge's one error handler: every error body is {"error": message} (plus any extra fields). */
export function errorHandler(logger: Logger): ErrorHandler {
  return (err, c) => {
    if (err instanceof SluiceError) {
      for (const [name, value] of Object.entries(err.headers ?? {})) c.header(name, value)
      return c.json({ error: err.message, ...err.extra }, err.status as ContentfulStatusCode)
    }
    if (err instanceof HTTPException) {
      const status = err.status
      const message = status === 401 ? 'invalid credentials' : err.message || 'request failed'
      if (status === 401) c.header('WWW-Authenticate', 'Basic realm="sluice"')
      return c.json({ error: message }, status)
    }
    logger.error({ err, path: c.req.path, method: c.req.method }, 'unhandled error')
    return c.json({ error: 'internal error' }, 500)
  }
}

export const notFoundHandler: NotFoundHandler = (c) => c.json({ error: 'not found' }, 404)
