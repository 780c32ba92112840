import { randomUUID } from 'node:crypto'
import { request } from 'node:http'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ADMIN_TOKEN } from '../helpers/edge.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'

// A whole embedded Sluice: the public API, the pipelines and the analysts' SQL port on one engine.
describe('SQL port beside the public API, embedded mode', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    // The analyst's query below can only end by being killed: its own limit is far away.
    sluice = await startInProcess({ SLUICE_SQL_MAX_EXECUTION_SECONDS: '300' })
  })
  afterAll(() => sluice?.close())

  it('answers profile GETs while an analyst query runs, and kills that query once its client has gone', async () => {
    const tenant = await sluice.tenant('sql-isolation', ['sql-isolation-app'])
    const api = async (method: string, path: string, body?: unknown) => {
      const res = await fetch(`${sluice.url}${path}`, {
        method,
        headers: { Authorization: tenant.auth, 'Content-Type': 'application/json' },
        body: body === undefined ? undefined : JSON.stringify(body),
      })
      const text = await res.text()
      return {
        status: res.status,
        body: text ? (JSON.parse(text) as { attributes?: Record<string, unknown> }) : {},
      }
    }
    expect((await api('PATCH', '/v1/profiles/ann', { attributes: { plan: 'gold' } })).status).toBe(202)
    await waitFor(
      () => api('GET', '/v1/profiles/ann'),
      (r) => r.status === 200 && r.body.attributes?.plan === 'gold',
      { what: 'the profile to be readable' },
    )

    const sqlUrl = `http://127.0.0.1:${sluice.running.sqlPort}`
    const auth = `Basic ${Buffer.from(`admin:${ADMIN_TOKEN}`).toString('base64')}`
    const probe = `probe-${randomUUID()}`
    const endless = `SELECT count() FROM numbers(1000000000000) WHERE NOT ignore(sipHash64(number, '${probe}'))`
    let answered = false
    const analyst = request(`${sqlUrl}/?${new URLSearchParams({ query: endless }).toString()}`, {
      headers: { Authorization: auth },
    })
    analyst.on('response', (res) => {
      answered = true
      res.resume()
    })
    analyst.on('error', () => undefined)
    analyst.end()
    const store = sluice.running.runtime.store
    const inEngine = async () => {
      const rows = await store.query<{ n: number | string }>(
        'SELECT count() AS n FROM system.processes WHERE query_id != queryID() AND position(query, {probe:String}) > 0',
        { probe },
      )
      return Number(rows[0]?.n)
    }
    await waitFor(inEngine, (n) => n === 1, { what: 'the analyst query in system.processes' })

    // The public API answers, with content, while the analyst's query is still running.
    for (let i = 0; i < 5; i++) {
      const res = await api('GET', '/v1/profiles/ann')
      expect(res).toMatchObject({ status: 200, body: { attributes: { plan: 'gold' } } })
    }
    expect(await inEngine()).toBe(1)
    expect(answered).toBe(false)

    analyst.destroy()
    await waitFor(inEngine, (n) => n === 0, { what: 'the abandoned query to stop', timeoutMs: 30_000 })
    expect(answered).toBe(false)
    const after = await fetch(`${sqlUrl}/?query=${encodeURIComponent('SELECT 1')}`, {
      headers: { Authorization: auth },
    })
    expect(await after.text()).toBe('1\n')
  })
})
