import { randomBytes } from 'node:crypto'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BusRecord, Consumer } from '../../pipelines/connectors/bus/bus.ts'
import { startEdgeOnly, type EdgeOnly } from '../helpers/edge-only.ts'
import { waitFor } from '../helpers/wait-for.ts'

// The edge reads upload bodies into memory it uses again once the log has stored them
// (upload-buffers.ts). Memory handed to the next upload too early would overwrite a body the
// log's write thread has not copied yet: every stored record must hold exactly the bytes its
// upload sent, with many uploads in flight at once, of sizes that share memory.
describe('upload bodies in reused memory: every record holds exactly what was sent', () => {
  let edge: EdgeOnly
  let consumer: Consumer | undefined
  let auth: string
  const records: BusRecord[] = []

  beforeAll(async () => {
    // The per-key limit (150/s by default) would refuse most of this burst.
    edge = await startEdgeOnly('buffers', { SLUICE_UPLOAD_RATE_PER_KEY: '100000' })
    const control = edge.running.runtime.control
    const org = await control.createOrg('buffers')
    const key = await control.createKey(org.id)
    auth = `Basic ${Buffer.from(`${key.api_key}:${key.api_secret}`).toString('base64')}`
    consumer = await edge.running.runtime.bus.consume({
      group: 'upload-buffers-test',
      topics: [edge.running.runtime.topology.topics.uploads.topic],
      handler: async (batch) => void records.push(...batch.records),
    })
  })
  afterAll(async () => {
    await consumer?.stop()
    await edge.close()
  })

  /** A body of about `bytes` bytes, one event per line, each line unique to this body. */
  function body(n: number, bytes: number): Buffer {
    const lines: string[] = []
    let size = 0
    for (let i = 0; size < bytes; i++) {
      const line = JSON.stringify({ event: 'e', uuid: `${n}-${i}`, pad: randomBytes(24).toString('hex') })
      lines.push(line)
      size += line.length + 1
    }
    return Buffer.from(lines.join('\n') + '\n')
  }

  it('stores 240 concurrent uploads of 20-200 KB, plain and gzip, byte for byte', async () => {
    const sent = Array.from({ length: 240 }, (_, n) => {
      const plain = body(n, 20_000 + ((n * 7919) % 180_000))
      // Every fifth one gzip (served through Hono; it reads into the same memory).
      const headers: Record<string, string> = n % 5 === 4 ? { 'Content-Encoding': 'gzip' } : {}
      return { stored: n % 5 === 4 ? gzipSync(plain) : plain, headers }
    })
    const byTx = new Map<string, Buffer>()
    let next = 0
    const sender = async () => {
      while (next < sent.length) {
        const upload = sent[next++]!
        const res = await fetch(`${edge.running.url}/v0/uploads`, {
          method: 'POST',
          headers: { Authorization: auth, 'Content-Type': 'application/json', ...upload.headers },
          body: upload.stored,
        })
        const answer = (await res.json()) as { transaction_id?: string }
        expect(res.status, JSON.stringify(answer)).toBe(202)
        byTx.set(answer.transaction_id!, upload.stored)
      }
    }
    await Promise.all(Array.from({ length: 16 }, sender))

    await waitFor(
      async () => records.length,
      (n) => n >= sent.length,
      { what: 'every upload on the bus' },
    )
    expect(records).toHaveLength(sent.length)
    const mismatched = records.filter((r) => !byTx.get(r.headers.tx!)?.equals(r.value))
    expect(mismatched.map((r) => r.headers.tx)).toEqual([])
    expect(new Set(records.map((r) => r.headers.tx)).size).toBe(sent.length)
  })
})
