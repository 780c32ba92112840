import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BusRecord, Consumer } from '../../pipelines/connectors/bus/bus.ts'
import type { RunningProcess } from '../../services/processes.ts'
import { startEdgeOnly, type EdgeOnly } from '../helpers/edge-only.ts'
import { oneEventBody } from '../helpers/ingestion-scenario.ts'
import { waitFor } from '../helpers/wait-for.ts'

// The edge's HTTP server serves POST /v0/uploads of plain bodies (and its other spellings) before
// Hono's dispatch (direct-dispatch.ts); a query string sends the same request through Hono's
// route. Every answer a client can get, and what lands on the bus, must be the same both ways
// (gzip bodies and refused Content-Types go to Hono either way: their cases check that too).
describe('the server-side upload served before Hono: the same answers as through Hono', () => {
  let edge: EdgeOnly
  let running: RunningProcess
  let consumer: Consumer | undefined
  let auth: string
  let profilesOnly: string
  const records: BusRecord[] = []

  const basic = (key: { api_key: string; api_secret: string }) =>
    `Basic ${Buffer.from(`${key.api_key}:${key.api_secret}`).toString('base64')}`

  beforeAll(async () => {
    edge = await startEdgeOnly('direct', { SLUICE_UPLOAD_MAX_BYTES: '8192' })
    running = edge.running
    const control = running.runtime.control
    const org = await control.createOrg('direct')
    auth = basic(await control.createKey(org.id))
    profilesOnly = basic(await control.createKey(org.id, ['profiles']))
    consumer = await running.runtime.bus.consume({
      group: 'direct-route-test',
      topics: [running.runtime.topology.topics.uploads.topic],
      handler: async (batch) => void records.push(...batch.records),
    })
  })
  afterAll(async () => {
    await consumer?.stop()
    await edge.close()
  })

  const body = () => oneEventBody()

  /** The answer to the same request sent direct and through Hono: status, the headers that matter, body. */
  async function both(path: string, init: RequestInit) {
    const answers = []
    for (const target of [path, `${path}?through=hono`]) {
      const res = await fetch(`${running.url}${target}`, { method: 'POST', ...init })
      answers.push({
        status: res.status,
        contentType: res.headers.get('Content-Type'),
        retryAfter: res.headers.get('Retry-After'),
        authenticate: res.headers.get('WWW-Authenticate'),
        body: (await res.json()) as Record<string, unknown>,
      })
    }
    return answers as [(typeof answers)[0], (typeof answers)[0]]
  }

  it('accepts an upload with a transaction id, and both records on the bus carry the same body and headers', async () => {
    const sent = body()
    const [direct, hono] = await both('/v0/uploads', {
      headers: { Authorization: auth, 'Content-Type': 'application/json' },
      body: sent,
    })
    expect(direct.status).toBe(202)
    expect(hono.status).toBe(202)
    expect(direct.contentType).toBe(hono.contentType)
    expect(Object.keys(direct.body)).toEqual(['transaction_id'])
    expect(direct.body.transaction_id).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(direct.body.transaction_id).not.toBe(hono.body.transaction_id)

    await waitFor(
      async () => records.length,
      (n) => n >= 2,
      { what: 'both records on the bus' },
    )
    const byTx = new Map(records.map((r) => [r.headers.tx, r]))
    const [d, h] = [
      byTx.get(direct.body.transaction_id as string)!,
      byTx.get(hono.body.transaction_id as string)!,
    ]
    expect(d.value.toString()).toBe(sent)
    expect(h.value.toString()).toBe(sent)
    const { tx: _dtx, recv: _drecv, ...directHeaders } = d.headers
    const { tx: _htx, recv: _hrecv, ...honoHeaders } = h.headers
    expect(directHeaders).toEqual(honoHeaders)
    expect(directHeaders).toMatchObject({ enc: 'identity', src: 'server' })
    expect(d.key).toBe(direct.body.transaction_id)

    // The receipt is readable for either (the route that answers it is Hono's).
    const receipt = await fetch(`${running.url}/v0/uploads/${direct.body.transaction_id as string}`, {
      headers: { Authorization: auth },
    })
    expect(receipt.status).toBe(200)
  })

  it('accepts gzip under every spelling of the path', async () => {
    for (const path of ['/v1/uploads', '/events/v0/uploads', '/events/v1/uploads']) {
      const [direct, hono] = await both(path, {
        headers: { Authorization: auth, 'Content-Type': 'application/x-gzip' },
        body: gzipSync(body()),
      })
      expect([direct.status, hono.status]).toEqual([202, 202])
    }
  })

  const refusals: [string, () => RequestInit, number, string][] = [
    [
      'no credentials',
      () => ({ headers: { 'Content-Type': 'application/json' }, body: body() }),
      401,
      'invalid credentials',
    ],
    [
      'a wrong secret',
      () => ({
        headers: { Authorization: `${auth.slice(0, -4)}AAAA`, 'Content-Type': 'application/json' },
        body: body(),
      }),
      401,
      'invalid credentials',
    ],
    [
      'a key without the events scope',
      () => ({ headers: { Authorization: profilesOnly, 'Content-Type': 'application/json' }, body: body() }),
      403,
      "this API key lacks the 'events' scope",
    ],
    [
      'an unsupported Content-Type',
      () => ({ headers: { Authorization: auth, 'Content-Type': 'text/plain' }, body: body() }),
      415,
      'Content-Type must be application/json or application/x-gzip, not text/plain',
    ],
    [
      'an empty body',
      () => ({ headers: { Authorization: auth, 'Content-Type': 'application/json' }, body: ' \n' }),
      400,
      'empty body: send one JSON object per line',
    ],
    [
      'a body that is not gzip',
      () => ({ headers: { Authorization: auth, 'Content-Type': 'application/x-gzip' }, body: 'plain text' }),
      400,
      'body is not valid gzip',
    ],
    [
      'a body over the size limit',
      () => ({
        headers: { Authorization: auth, 'Content-Type': 'application/json' },
        body: 'x'.repeat(20_000),
      }),
      413,
      'body must be smaller than 8 KB',
    ],
  ]

  it.each(refusals)('refuses %s with the same answer', async (_name, init, status, message) => {
    const before = records.length
    const [direct, hono] = await both('/v0/uploads', init())
    expect(direct).toEqual(hono)
    expect(direct.status).toBe(status)
    expect(direct.body).toEqual({ error: message, errors: [message] })
    if (status === 401) expect(direct.authenticate).toContain('Basic realm="sluice"')
    // Nothing refused reaches the bus.
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(records.length).toBe(before)
  })

  it('counts both in the same request metrics, labelled by the route', async () => {
    const text = await (await fetch(`${running.url}/metrics`)).text()
    const count = (status: string) =>
      Number(
        new RegExp(
          `sluice_http_requests_total\\{method="POST",route="/v0/uploads",status="${status}"\\} (\\d+)`,
        ).exec(text)?.[1] ?? 0,
      )
    // Two 202s on /v0/uploads (direct and Hono), two 415s, two 413s.
    expect(count('202')).toBe(2)
    expect(count('415')).toBe(2)
    expect(count('413')).toBe(2)
  })
})
