import { connect } from 'node:net'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest'
import type { RunningProcess } from '../../services/processes.ts'
import { ADMIN_TOKEN } from '../helpers/edge.ts'
import { startEdgeOnly, type EdgeOnly } from '../helpers/edge-only.ts'
import { oneEventBody } from '../helpers/ingestion-scenario.ts'
import { waitFor } from '../helpers/wait-for.ts'

// An edge with no worker behind it, tight limits: what a client sees when it sends too fast, when
// a body inflates too far, and when ingestion falls behind.
describe('upload limits and load shedding at the edge', () => {
  let edge: EdgeOnly
  let running: RunningProcess
  let auth: string
  const post = (
    body: string | Buffer,
    headers: Record<string, string> = { 'Content-Type': 'application/json' },
  ) =>
    fetch(`${running.url}/v0/uploads`, { method: 'POST', headers: { Authorization: auth, ...headers }, body })

  beforeAll(async () => {
    edge = await startEdgeOnly('limits', {
      SLUICE_UPLOAD_RATE_PER_KEY: '3',
      SLUICE_UPLOAD_MAX_DECOMPRESSED_BYTES: '4096',
      SLUICE_MAX_BUS_LAG: '5',
      SLUICE_UPLOAD_MAX_IN_FLIGHT_BYTES: '200000',
    })
    running = edge.running
    const admin = async <T>(path: string, body: unknown) =>
      (await (
        await fetch(`${running.url}/admin/v1${path}`, {
          method: 'POST',
          headers: { Authorization: `Bearer ${ADMIN_TOKEN}`, 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
        })
      ).json()) as T
    const org = await admin<{ id: number }>('/orgs', { name: 'limits' })
    const key = await admin<{ api_key: string; api_secret: string }>(`/orgs/${org.id}/keys`, {})
    auth = `Basic ${Buffer.from(`${key.api_key}:${key.api_secret}`).toString('base64')}`
  })
  afterAll(async () => {
    await edge.close()
  })

  const body = () => oneEventBody()

  it('answers 413 for gzip that inflates past the configured limit', async () => {
    const bomb = gzipSync(Buffer.alloc(10_000, 0x20))
    expect(bomb.length).toBeLessThan(200)
    const res = await post(bomb, { 'Content-Type': 'application/x-gzip' })
    expect(res.status).toBe(413)
    expect(await res.json()).toEqual({
      error: 'body inflates to 4 KB or more',
      errors: ['body inflates to 4 KB or more'],
    })
  })

  it('answers 429 with Retry-After past the per-key rate', async () => {
    // A key of its own starts with a full bucket, and time stands still while it sends, so no
    // token comes back mid-test however slow the machine is.
    const control = running.runtime.control
    const key = await control.createKey((await control.createOrg('rate')).id)
    const headers = {
      'Content-Type': 'application/json',
      Authorization: `Basic ${Buffer.from(`${key.api_key}:${key.api_secret}`).toString('base64')}`,
    }
    const statuses: number[] = []
    let limited: Response | undefined
    vi.useFakeTimers({ toFake: ['Date'] })
    try {
      for (let i = 0; i < 5; i++) {
        const res = await post(body(), headers)
        statuses.push(res.status)
        if (res.status === 429) limited = res
      }
    } finally {
      vi.useRealTimers()
    }
    expect(statuses.slice(0, 3)).toEqual([202, 202, 202])
    expect(statuses.slice(3)).toEqual([429, 429])
    expect(limited?.headers.get('Retry-After')).toBe('1')
    expect(await limited?.json()).toEqual({ error: 'rate limit exceeded', errors: ['rate limit exceeded'] })
  })

  it('counts a body as in flight while it arrives: past SLUICE_UPLOAD_MAX_IN_FLIGHT_BYTES, 503', async () => {
    const control = running.runtime.control
    const keyAuth = async (name: string) => {
      const key = await control.createKey((await control.createOrg(name)).id)
      return `Basic ${Buffer.from(`${key.api_key}:${key.api_secret}`).toString('base64')}`
    }
    // An upload of 150,000 bytes whose body arrives slowly: its head and 1,000 bytes now, the rest later.
    const line = Buffer.from(body())
    const slow = Buffer.concat([line, Buffer.alloc(150_000 - line.length, 0x20)])
    const url = new URL(running.url ?? 'http://missing')
    const socket = connect(Number(url.port), url.hostname)
    let answer = ''
    socket.on('data', (d: Buffer) => (answer += d.toString()))
    const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()))
    socket.write(
      `POST /v0/uploads HTTP/1.1\r\nHost: ${url.host}\r\nAuthorization: ${await keyAuth('slow')}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${slow.length}\r\nConnection: close\r\n\r\n`,
    )
    socket.write(slow.subarray(0, 1000))
    // A probe of 60,000 blank bytes: admitted, it is read and refused as empty (400), so it adds
    // nothing to the backlog; once the slow body is held, 150,000 + 60,000 passes the limit.
    const probeAuth = await keyAuth('probe')
    const probe = () =>
      post(Buffer.alloc(60_000, 0x20), { 'Content-Type': 'application/json', Authorization: probeAuth })
    const refused = await waitFor(probe, (res) => res.status === 503, {
      what: 'a 503 while the slow body arrives',
      timeoutMs: 20_000,
      intervalMs: 400,
    })
    expect(refused.headers.get('Retry-After')).toBe('2')
    expect(await refused.json()).toEqual({
      error: 'too many uploads in flight; retry later',
      errors: ['too many uploads in flight; retry later'],
    })
    // The rest of the slow body: it is accepted, and its bytes are no longer held.
    socket.write(slow.subarray(1000))
    await closed
    expect(answer).toMatch(/^HTTP\/1\.1 202 /)
    expect(answer).toMatch(/\{"transaction_id":"[A-Za-z0-9_-]{43}"\}$/)
    const after = await waitFor(probe, (res) => res.status !== 429, { what: 'a probe past the rate limit' })
    expect(after.status).toBe(400)
    expect(((await after.json()) as { error: string }).error).toBe(
      'empty body: send one JSON object per line',
    )
  })

  it('sheds load with 503 and Retry-After once the backlog passes the limit, and keeps serving', async () => {
    // No worker consumes: every accepted body stays in the backlog.
    const statuses: number[] = []
    const shed = await waitFor(
      async () => {
        await new Promise((r) => setTimeout(r, 350))
        const res = await post(body())
        statuses.push(res.status)
        return res
      },
      (res) => res.status === 503,
      { what: 'a 503', timeoutMs: 20_000, intervalMs: 0 },
    )
    expect(shed.headers.get('Retry-After')).toBe('2')
    expect(((await shed.json()) as { error: string }).error).toMatch(/ingestion is behind .*uploads backlog/)
    // Up to the 503 every upload was accepted (the earlier tests' bodies count in the backlog too).
    expect(statuses.slice(0, -1).every((s) => s === 202)).toBe(true)
    expect((await fetch(`${running.url}/healthz`)).status).toBe(200)
  })
})
