import type { MiddlewareHandler } from 'hono'
import { safeEqual } from '../../control/credentials.ts'
import { SluiceError } from '../../shared/errors.ts'
import { authAttemptsOf } from './auth-failure-limit.ts'

/**
 * Bearer auth with the admin token, compared in constant time. No token configured: admin API
 * closed. A wrong token counts against the per-address limit on failed attempts.
 */
export function adminAuth(token: string | undefined): MiddlewareHandler {
  return async (c, next) => {
    const attempts = authAttemptsOf(c)
    attempts?.check()
    const header = c.req.header('Authorization') ?? ''
    const match = /^Bearer\s+(\S+)\s*$/i.exec(header)
    if (!token || !match?.[1] || !safeEqual(match[1], token)) {
      if (match?.[1]) attempts?.failed()
      throw new SluiceError('unauthorized', 401, 'invalid admin token', {
        headers: { 'WWW-Authenticate': 'Bearer realm="sluice-admin"' },
      })
    }
    await next()
  }
}
