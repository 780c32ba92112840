import { Hono } from 'hono'
import { describe, expect, it } from 'vitest'
import type { EdgeEnv } from '../../services/edge/env.ts'
import { errorHandler } from '../../services/edge/middleware/errors.ts'
import { requireHttps, type RequireHttpsOptions } from '../../services/edge/middleware/require-https.ts'
import { createLogger } from '../../services/shared/logger.ts'

/** Plain HTTP only from this machine or through a trusted proxy that says its client used HTTPS. */
function app(options: Partial<RequireHttpsOptions> = {}) {
  const a = new Hono<EdgeEnv>()
  a.use('*', requireHttps({ trustedProxies: ['10.1.0.0/16'], allowPlainHttp: false, ...options }))
  a.get('*', (c) => c.json({ ok: true }))
  a.onError(errorHandler(createLogger('silent')))
  return a
}

const from = (remoteAddress: string, encrypted = false) => ({
  incoming: { socket: { remoteAddress, encrypted } },
})

describe('requireHttps', () => {
  it('refuses plain HTTP from another machine with a 403 that says what to do', async () => {
    const res = await app().request('/v1/auth/check', {}, from('203.0.113.7'))
    expect(res.status).toBe(403)
    const body = (await res.json()) as { error: string; errors: string[] }
    expect(body.error).toMatch(/^plain HTTP is refused: send requests over HTTPS/)
    expect(body.errors).toEqual([body.error])
  })

  it.each([
    ['loopback IPv4', from('127.0.0.1')],
    ['loopback IPv6', from('::1')],
    ['IPv4-mapped loopback', from('::ffff:127.0.0.1')],
    ['IPv4-mapped loopback in capitals', from('::FFFF:127.0.0.1')],
    ['TLS from anywhere', from('203.0.113.7', true)],
  ])('answers %s', async (_name, env) => {
    const res = await app().request('/v1/auth/check', {}, env)
    expect(await res.json()).toEqual({ ok: true })
  })

  it('believes X-Forwarded-Proto only from a trusted proxy', async () => {
    const https = { headers: { 'X-Forwarded-Proto': 'https' } }
    expect((await app().request('/x', https, from('10.1.2.3'))).status).toBe(200)
    expect((await app().request('/x', {}, from('10.1.2.3'))).status).toBe(403)
    expect(
      (await app().request('/x', { headers: { 'X-Forwarded-Proto': 'http' } }, from('10.1.2.3'))).status,
    ).toBe(403)
    expect((await app().request('/x', https, from('203.0.113.7'))).status).toBe(403)
    // The proxy's IPv4 address as an IPv4-mapped IPv6 one is the same proxy; another is not.
    expect((await app().request('/x', https, from('::ffff:10.1.2.3'))).status).toBe(200)
    expect((await app().request('/x', {}, from('::ffff:10.1.2.3'))).status).toBe(403)
    expect((await app().request('/x', {}, from('::ffff:203.0.113.7'))).status).toBe(403)
  })

  it('keeps health, readiness and metrics reachable, and can be switched off', async () => {
    for (const path of ['/healthz', '/readyz', '/metrics'])
      expect((await app().request(path, {}, from('203.0.113.7'))).status).toBe(200)
    expect((await app({ allowPlainHttp: true }).request('/v0/uploads', {}, from('203.0.113.7'))).status).toBe(
      200,
    )
  })
})
