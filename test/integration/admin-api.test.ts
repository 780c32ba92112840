import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { adminHeaders, basic, edgeOverChdb } from '../helpers/edge.ts'

type Edge = Awaited<ReturnType<typeof edgeOverChdb>>

describe('admin API and API-key auth (through app.request)', () => {
  let edge: Edge
  beforeAll(async () => {
    edge = await edgeOverChdb()
  })
  afterAll(() => edge.close())

  const post = (path: string, body: unknown) =>
    edge.app.request(path, { method: 'POST', headers: adminHeaders, body: JSON.stringify(body) })

  it('refuses requests without the admin token', async () => {
    const none = await edge.app.request('/admin/v1/orgs')
    expect(none.status).toBe(401)
    expect(await none.json()).toEqual({ error: 'invalid admin token', errors: ['invalid admin token'] })
    const wrong = await edge.app.request('/admin/v1/orgs', { headers: { Authorization: 'Bearer nope' } })
    expect(wrong.status).toBe(401)
  })

  it('creates orgs, apps and keys with the documented shapes', async () => {
    const orgRes = await post('/admin/v1/orgs', { name: 'Acme' })
    expect(orgRes.status).toBe(201)
    const org = (await orgRes.json()) as { id: number; name: string; profiledb_id: number }
    expect(Object.keys(org).sort()).toEqual(['id', 'name', 'profiledb_id'])
    expect(Number.isInteger(org.id)).toBe(true)
    expect(org.name).toBe('Acme')
    expect(Number.isInteger(org.profiledb_id)).toBe(true)

    const second = (await (await post('/admin/v1/orgs', { name: 'Beta' })).json()) as {
      id: number
      profiledb_id: number
    }
    expect(second.id).toBe(org.id + 1)
    expect(second.profiledb_id).not.toBe(org.profiledb_id)

    const appRes = await post(`/admin/v1/orgs/${org.id}/apps`, { name: 'iOS', app_id: 'acme-ios' })
    expect(appRes.status).toBe(201)
    const app = await appRes.json()
    expect(app).toEqual({ app_id: 'acme-ios', org_id: org.id, name: 'iOS', profiledb_id: expect.any(Number) })

    const generated = (await (await post(`/admin/v1/orgs/${org.id}/apps`, { name: 'Android' })).json()) as {
      app_id: string
      profiledb_id: number
    }
    expect(typeof generated.app_id).toBe('string')
    expect(generated.app_id.length).toBeGreaterThanOrEqual(16)
    const profileDbs = new Set([
      org.profiledb_id,
      second.profiledb_id,
      (app as { profiledb_id: number }).profiledb_id,
      generated.profiledb_id,
    ])
    expect(profileDbs.size).toBe(4)

    const duplicate = await post(`/admin/v1/orgs/${org.id}/apps`, { name: 'again', app_id: 'acme-ios' })
    expect(duplicate.status).toBe(409)

    const apps = (await (
      await edge.app.request(`/admin/v1/orgs/${org.id}/apps`, { headers: adminHeaders })
    ).json()) as {
      app_id: string
    }[]
    expect(apps.map((a) => a.app_id).sort()).toEqual(['acme-ios', generated.app_id].sort())

    const orgs = (await (await edge.app.request('/admin/v1/orgs', { headers: adminHeaders })).json()) as {
      name: string
    }[]
    expect(orgs.map((o) => o.name)).toEqual(['Acme', 'Beta'])

    const keyRes = await post(`/admin/v1/orgs/${org.id}/keys`, {})
    expect(keyRes.status).toBe(201)
    const key = (await keyRes.json()) as { api_key: string; api_secret: string; scopes: string[] }
    expect(Object.keys(key).sort()).toEqual(['api_key', 'api_secret', 'scopes'])
    expect(key.scopes).toEqual(['profiles', 'push', 'events', 'exports', 'campaigns', 'query'])

    const check = await edge.app.request('/v1/auth/check', { headers: basic(key.api_key, key.api_secret) })
    expect(check.status).toBe(200)
    expect(await check.json()).toEqual({ org_id: org.id, scopes: key.scopes })

    // The secret is never stored in clear.
    const stored = await edge.store.query<{ secret_hash: string }>('SELECT secret_hash FROM api_keys')
    expect(stored.some((r) => r.secret_hash.includes(key.api_secret))).toBe(false)
  })

  it('answers 400 for bad input and 404 for unknown orgs', async () => {
    const bad = await edge.app.request('/admin/v1/orgs', {
      method: 'POST',
      headers: adminHeaders,
      body: '{nope',
    })
    expect(bad.status).toBe(400)
    expect(await bad.json()).toEqual({
      error: 'request body is not valid JSON',
      errors: ['request body is not valid JSON'],
    })
    const empty = await post('/admin/v1/orgs', { name: '   ' })
    expect(empty.status).toBe(400)
    expect(((await empty.json()) as { error: string }).error).toMatch(/name/)
    const scopes = await post('/admin/v1/orgs/1/keys', { scopes: ['root'] })
    expect(scopes.status).toBe(400)
    expect(((await scopes.json()) as { error: string }).error).toMatch(/scopes/)
    const missing = await post('/admin/v1/orgs/999/apps', { name: 'x' })
    expect(missing.status).toBe(404)
    expect(await missing.json()).toEqual({ error: 'org 999 not found', errors: ['org 999 not found'] })
    const notInt = await edge.app.request('/admin/v1/orgs/abc/apps', { headers: adminHeaders })
    expect(notInt.status).toBe(400)
  })

  it('answers 401 alike for an unknown key and a wrong secret, 403 for a missing scope', async () => {
    const org = (await (await post('/admin/v1/orgs', { name: 'Scoped' })).json()) as { id: number }
    const key = (await (await post(`/admin/v1/orgs/${org.id}/keys`, { scopes: ['events'] })).json()) as {
      api_key: string
      api_secret: string
      scopes: string[]
    }
    expect(key.scopes).toEqual(['events'])
    const wrongSecret = await edge.app.request('/v1/auth/check', { headers: basic(key.api_key, 'wrong') })
    const unknownKey = await edge.app.request('/v1/auth/check', { headers: basic('nokey', 'wrong') })
    const noHeader = await edge.app.request('/v1/auth/check')
    for (const res of [wrongSecret, unknownKey, noHeader]) {
      expect(res.status).toBe(401)
      expect(await res.json()).toEqual({ error: 'invalid credentials', errors: ['invalid credentials'] })
      expect(res.headers.get('WWW-Authenticate')).toMatch(/^Basic/)
    }
    const ok = await edge.app.request('/v1/auth/check', { headers: basic(key.api_key, key.api_secret) })
    expect(await ok.json()).toEqual({ org_id: org.id, scopes: ['events'] })
  })

  it('revokes a key', async () => {
    const org = (await (await post('/admin/v1/orgs', { name: 'Revoke' })).json()) as { id: number }
    const key = (await (await post(`/admin/v1/orgs/${org.id}/keys`, {})).json()) as {
      api_key: string
      api_secret: string
    }
    const before = await edge.app.request('/v1/auth/check', { headers: basic(key.api_key, key.api_secret) })
    expect(before.status).toBe(200)
    const otherOrg = await edge.app.request(`/admin/v1/orgs/1/keys/${key.api_key}`, {
      method: 'DELETE',
      headers: adminHeaders,
    })
    expect(otherOrg.status).toBe(404)
    const del = await edge.app.request(`/admin/v1/orgs/${org.id}/keys/${key.api_key}`, {
      method: 'DELETE',
      headers: adminHeaders,
    })
    expect(del.status).toBe(204)
    const after = await edge.app.request('/v1/auth/check', { headers: basic(key.api_key, key.api_secret) })
    expect(after.status).toBe(401)
    const keys = (await (
      await edge.app.request(`/admin/v1/orgs/${org.id}/keys`, { headers: adminHeaders })
    ).json()) as {
      api_key: string
      revoked: boolean
    }[]
    expect(keys).toEqual([{ api_key: key.api_key, scopes: expect.any(Array), revoked: true }])
  })

  it('serves health, readiness and metrics', async () => {
    expect(await (await edge.app.request('/healthz')).json()).toEqual({ status: 'ok' })
    const ready = await edge.app.request('/readyz')
    expect(ready.status).toBe(200)
    expect(await ready.json()).toEqual({ status: 'ready', draining: false, checks: { store: true } })
    const metrics = await (await edge.app.request('/metrics')).text()
    expect(metrics).toContain('sluice_http_requests_total{method="GET",route="/healthz",status="200"}')
    const unknown = await edge.app.request('/nope')
    expect(unknown.status).toBe(404)
    expect(await unknown.json()).toEqual({ error: 'not found', errors: ['not found'] })
  })
})
