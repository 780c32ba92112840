import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { NOT_API, OPERATIONS, openApiPath, operationId } from '../../schemas/openapi/document.ts'
import { openApi } from '../helpers/openapi-check.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'

describe('the OpenAPI document', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess()
  })
  afterAll(() => sluice.close())

  it('documents every route the edge registers, and no route it does not', () => {
    const registered = new Set<string>()
    for (const route of sluice.running.edgeApp!.routes) {
      // Middleware and the catch-alls of the API prefixes are not operations.
      if (route.method === 'ALL') continue
      if (NOT_API.some((pattern) => pattern.test(route.path))) continue
      registered.add(`${route.method.toLowerCase()} ${route.path}`)
    }
    const documented = new Set(OPERATIONS.map((op) => `${op.method} ${op.path}`))
    expect(
      [...registered].filter((r) => !documented.has(r)),
      'routes without an operation',
    ).toEqual([])
    expect(
      [...documented].filter((d) => !registered.has(d)),
      'operations without a route',
    ).toEqual([])
    expect(new Set(OPERATIONS.map(operationId)).size).toBe(OPERATIONS.length)
  })

  it('is served at /openapi.json with examples that validate against their schemas', async () => {
    const res = await fetch(`${sluice.url}/openapi.json`)
    expect(res.status).toBe(200)
    const served = (await res.json()) as { openapi: string; paths: Record<string, Record<string, unknown>> }
    const check = openApi()
    expect(served).toEqual(JSON.parse(JSON.stringify(check.document)))
    expect(served.openapi).toBe('3.1.0')
    let examples = 0
    for (const op of OPERATIONS) {
      const documented = served.paths[openApiPath(op.path)]![op.method] as {
        requestBody?: { content: Record<string, { schema: Record<string, unknown>; example: unknown }> }
        responses: Record<
          string,
          { content?: Record<string, { schema: Record<string, unknown>; example?: unknown }> }
        >
        security: unknown[]
      }
      expect(documented.security, `${op.method} ${op.path}`).toEqual(
        op.auth === 'none' ? [] : [{ [op.auth === 'basic' ? 'apiKey' : 'adminToken']: [] }],
      )
      for (const media of Object.values(documented.requestBody?.content ?? {})) {
        expect(check.errors(media.schema, media.example), `${op.method} ${op.path} request example`).toEqual(
          [],
        )
        examples++
      }
      const success = Object.entries(documented.responses).filter(([status]) => /^[23]/.test(status))
      expect(success.length, `${op.method} ${op.path} has a success answer`).toBeGreaterThan(0)
      for (const [status, answer] of success) {
        const media = answer.content?.['application/json']
        if (!media) continue
        expect(media.example, `${op.method} ${op.path} ${status} has an example`).toBeDefined()
        expect(
          check.errors(media.schema, media.example),
          `${op.method} ${op.path} ${status} example`,
        ).toEqual([])
        examples++
      }
    }
    expect(examples).toBeGreaterThan(OPERATIONS.length)
  })

  it('renders the reference at /docs from files the edge serves, under a CSP without inline scripts', async () => {
    const page = await fetch(`${sluice.url}/docs`)
    const html = await page.text()
    expect(page.headers.get('content-security-policy')).toContain("script-src 'self'")
    const scripts = [...html.matchAll(/<script src="([^"]+)"/g)].map((m) => m[1]!)
    expect(scripts).toEqual(['/docs/assets/swagger-ui-bundle.js', '/docs/assets/docs-init.js'])
    expect(html).not.toMatch(/<script>/)
    const bundle = await fetch(`${sluice.url}${scripts[0]}`, { headers: { 'Accept-Encoding': 'gzip' } })
    expect(bundle.headers.get('content-type')).toMatch(/javascript/)
    expect((await bundle.text()).includes('SwaggerUIBundle')).toBe(true)
    expect(await (await fetch(`${sluice.url}${scripts[1]}`)).text()).toContain("url: '/openapi.json'")
    const traversal = await fetch(`${sluice.url}/docs/assets/..%2Fpackage.json`)
    expect(traversal.status).toBe(404)
    expect(await traversal.json()).toEqual({ error: 'no such file', errors: ['no such file'] })
  })

  it('describes the answers of the admin API as they are', async () => {
    const check = openApi()
    const admin = { Authorization: 'Bearer test-admin-token-0123456789', 'Content-Type': 'application/json' }
    const call = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${sluice.url}${path}`, {
        method,
        headers: admin,
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      await check.expectDocumented(method, path, res)
      return res
    }
    const org = (await (await call('POST', '/admin/v1/orgs', { name: 'Doc org' })).json()) as { id: number }
    await call('GET', '/admin/v1/orgs')
    await call('GET', `/admin/v1/orgs/${org.id}`)
    await call('POST', `/admin/v1/orgs/${org.id}/apps`, { name: 'Doc app', app_id: 'doc-app' })
    await call('GET', `/admin/v1/orgs/${org.id}/apps`)
    await call('POST', `/admin/v1/orgs/${org.id}/keys`, { scopes: ['events'] })
    await call('GET', `/admin/v1/orgs/${org.id}/keys`)
    await call('GET', '/admin/v1/jobs')
    await call('GET', '/admin/v1/dead-letters?limit=5')
    await call('GET', '/admin/v1/apps/doc-app/push/transports')
    await call('GET', `/admin/v1/orgs/${org.id}/exports`)
    // Errors are in the shared shape the document gives them.
    const bad = await call('POST', '/admin/v1/orgs', { name: '' })
    expect(bad.status).toBe(400)
    const unknown = await call('GET', '/admin/v1/orgs/999999')
    expect(await unknown.json()).toEqual({ error: 'org 999999 not found', errors: ['org 999999 not found'] })
    // A wrong answer is caught: the check is not a formality.
    const res = await fetch(`${sluice.url}/admin/v1/orgs`, { headers: admin })
    const fake = new Response(JSON.stringify([{ id: 'one' }]), {
      status: 200,
      headers: { 'Content-Type': 'application/json' },
    })
    await expect(check.expectDocumented('GET', '/admin/v1/orgs', fake)).rejects.toThrow(
      /GET \/admin\/v1\/orgs 200/,
    )
    const schema = { $ref: '#/components/schemas/get_admin_v1_orgs_200' }
    expect(check.errors(schema, [{ id: 'one' }])).toEqual([
      "/0 must have required property 'name'",
      "/0 must have required property 'profiledb_id'",
      '/0/id must be integer',
    ])
    expect(res.status).toBe(200)
  })
})
