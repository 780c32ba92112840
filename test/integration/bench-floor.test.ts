import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { gzipSync } from 'node:zlib'
import { open } from 'lmdb'
import { afterEach, describe, expect, it } from 'vitest'
import { BaselineServer, combineBareResults, type BaselineLoad } from '../../bench/baselines/run.ts'
import { Progress } from '../../bench/progress.ts'

// The bench's edge floor (bench/baselines/floor-server.ts) in its child process, timed in windows
// as the edge scenarios time it: what it keeps is what edge_ratio is measured against.
const dirs: string[] = []
afterEach(async () => {
  for (const dir of dirs.splice(0)) await rm(dir, { recursive: true, force: true })
})

const progress = new Progress({ isTTY: false, write: () => true } as unknown as NodeJS.WriteStream)

function load(kind: 'plain' | 'gzip', bodies: Buffer[]): BaselineLoad {
  return {
    kind,
    bodies: bodies.map((body) => ({ body, events: 1 })),
    headers: { 'Content-Type': kind === 'gzip' ? 'application/x-gzip' : 'application/json' },
    concurrency: 2,
  }
}

/** The floor's log, read after the server stopped: every key and the bytes under it. */
function readLog(dir: string): { keys: number[]; bytes: number } {
  const env = open({ path: dir, maxDbs: 4, readOnly: true })
  try {
    const records = env.openDB<Buffer, number>({ name: 'records', encoding: 'binary' })
    const keys: number[] = []
    let bytes = 0
    for (const { key, value } of records.getRange()) {
      keys.push(key)
      bytes += value.length
    }
    return { keys, bytes }
  } finally {
    void env.close()
  }
}

async function stopped(server: BaselineServer): Promise<void> {
  const pid = server.pid
  server.stop()
  // The child exits once its log is closed; until then a reader could miss its last commit.
  for (let i = 0; i < 200; i++) {
    try {
      process.kill(pid, 0)
    } catch {
      return
    }
    await new Promise((resolve) => setTimeout(resolve, 25))
  }
  throw new Error('the floor server did not exit')
}

describe('the edge floor', () => {
  it('keeps every body it answered 202 under a key of its own, across windows and restarts', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floor-'))
    dirs.push(dir)
    const bodies = [Buffer.from('{"event":"a"}\n'), Buffer.from('{"event":"bb"}\n{"event":"c"}\n')]
    const first = await BaselineServer.start('floor', load('plain', bodies), dir)
    const latencies: number[] = []
    const parts = [await first.timed(150, progress, latencies), await first.timed(150, progress, latencies)]
    await stopped(first)
    // A second server on the same log (the bench's next body kind, or a rerun) appends after it.
    const second = await BaselineServer.start('floor', load('plain', bodies), dir)
    parts.push(await second.timed(150, progress))
    await stopped(second)

    const combined = combineBareResults(parts, latencies)
    expect(combined.errors).toBe(0)
    expect(combined.requests).toBeGreaterThan(3)
    expect(latencies).toHaveLength(parts[0]!.requests + parts[1]!.requests)
    const log = readLog(dir)
    // Nothing overwritten: one record per 202, keys 0..n-1, the bytes of the bodies sent.
    expect(log.keys).toEqual(Array.from({ length: combined.requests }, (_, i) => i))
    expect(log.bytes).toBe(combined.bytes)
    const sizes = bodies.map((b) => b.length)
    expect(combined.bytes).toBeGreaterThanOrEqual(combined.requests * Math.min(...sizes))
    expect(combined.bytes).toBeLessThanOrEqual(combined.requests * Math.max(...sizes))
  })

  it('checks gzip bodies: stores good ones, answers 400 to bad ones and stores nothing of them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'floor-'))
    dirs.push(dir)
    const good = gzipSync(Buffer.from('{"event":"a"}\n'))
    const goodServer = await BaselineServer.start('floor', load('gzip', [good]), dir)
    const ok = await goodServer.timed(100, progress)
    await stopped(goodServer)
    const badServer = await BaselineServer.start('floor', load('gzip', [Buffer.from('not gzip at all')]), dir)
    const bad = await badServer.timed(100, progress)
    await stopped(badServer)

    expect(ok.requests).toBeGreaterThan(0)
    expect(ok.errors).toBe(0)
    expect(bad.requests).toBe(0)
    expect(bad.errors).toBeGreaterThan(0)
    const log = readLog(dir)
    expect(log.keys).toHaveLength(ok.requests)
    expect(log.bytes).toBe(ok.requests * good.length)
  })
})
