import { Hono } from 'hono'
import { HTTPException } from 'hono/http-exception'
import { describe, expect, it } from 'vitest'
import { errorHandler } from '../../services/edge/middleware/errors.ts'
import { SluiceError, badRequest, unavailable } from '../../services/shared/errors.ts'
import { createLogger } from '../../services/shared/logger.ts'

/** An app whose routes throw the given errors, and the log lines its onError wrote. */
function appThrowing(errors: Record<string, () => Error>) {
  const lines: Record<string, unknown>[] = []
  const logger = createLogger('info', {
    write: (line: string) => lines.push(JSON.parse(line) as Record<string, unknown>),
  })
  const app = new Hono()
  for (const [path, make] of Object.entries(errors)) {
    app.get(path, () => {
      throw make()
    })
  }
  app.onError(errorHandler(logger))
  return { app, lines }
}

describe('the edge logs 5xx answers with their cause', () => {
  it('a 5xx SluiceError: error level, with the cause and its own cause', async () => {
    const { app, lines } = appThrowing({
      '/store': () =>
        new SluiceError('bus_unavailable', 503, 'could not store the upload durably; retry', {
          retriable: true,
          cause: new Error('lmdb commit failed', { cause: new Error('ENOSPC: no space left on device') }),
        }),
    })
    const res = await app.request('/store')
    expect(res.status).toBe(503)
    expect(await res.json()).toEqual({
      error: 'could not store the upload durably; retry',
      errors: ['could not store the upload durably; retry'],
    })
    expect(lines).toHaveLength(1)
    expect(lines[0]).toMatchObject({
      level: 50,
      msg: 'could not store the upload durably; retry',
      code: 'bus_unavailable',
      method: 'GET',
      path: '/store',
      cause: { type: 'Error', message: 'lmdb commit failed: ENOSPC: no space left on device' },
    })
  })

  it('a 5xx HTTPException is logged at error level too', async () => {
    const { app, lines } = appThrowing({
      '/gateway': () => new HTTPException(502, { message: 'upstream failed', cause: new Error('reset') }),
    })
    expect((await app.request('/gateway')).status).toBe(502)
    expect(lines).toEqual([
      expect.objectContaining({
        level: 50,
        msg: 'upstream failed',
        cause: expect.objectContaining({ message: 'reset' }),
      }),
    ])
  })

  it('load shedding (503 without a cause) is a warning; 4xx answers log nothing', async () => {
    const { app, lines } = appThrowing({
      '/shed': () => unavailable(2, 'too much work waiting'),
      '/bad': () => badRequest('no'),
    })
    expect((await app.request('/shed')).status).toBe(503)
    expect((await app.request('/bad')).status).toBe(400)
    expect(lines.map((l) => [l.level, l.msg])).toEqual([[40, 'too much work waiting']])
  })
})
