import { randomBytes } from 'node:crypto'
import { deflateSync, gzipSync } from 'node:zlib'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { checkGzip } from '../../pipelines/events/gzip.ts'
import { createGzipCheck, openNativeGzipChecker, type GzipCheck } from '../../pipelines/events/gzip-check.ts'
import { readUploadBody, type UploadRequest } from '../../services/edge/upload-body.ts'
import { SluiceError } from '../../services/shared/errors.ts'

const lines = (n: number, from = 0) =>
  Buffer.from(
    Array.from({ length: n }, (_, i) => `{"n":${from + i},"pad":"${'x'.repeat(i % 50)}"}\n`).join(''),
  )
const MB = 1024 * 1024

/** Bodies a client may send, good and bad, with what node:zlib makes of each. */
function corpus(): [string, Buffer][] {
  const text = lines(40_000) // ~2.6 MB inflated: ten output windows and more
  const body = gzipSync(text)
  // Incompressible: larger than the check's 128 KB input window, fed to zlib in turns.
  const noise = gzipSync(randomBytes(400 * 1024))
  return [
    ['one member', body],
    ['two members', Buffer.concat([body, gzipSync(lines(10))])],
    ['a second member past the first input window', Buffer.concat([noise, body])],
    ['zero padding after the member', Buffer.concat([body, Buffer.alloc(7)])],
    ['zero padding, then bytes', Buffer.concat([body, Buffer.from([0, 1, 2, 3])])],
    ['garbage after the member', Buffer.concat([body, Buffer.from('trailing')])],
    ['the start of a second member, cut short', Buffer.concat([body, gzipSync(lines(100)).subarray(0, 30)])],
    ['cut inside the trailer', body.subarray(0, body.length - 3)],
    ['cut inside the data', body.subarray(0, body.length >> 1)],
    ['cut inside the header', body.subarray(0, 5)],
    [
      'a corrupted byte',
      Buffer.concat([body.subarray(0, 500), Buffer.from([body[500]! ^ 0xff]), body.subarray(501)]),
    ],
    ['a zlib stream, not gzip', deflateSync(text)],
    ['not compressed at all', text.subarray(0, 4000)],
    ['an empty gzip member', gzipSync(Buffer.alloc(0))],
    ['blank lines only', gzipSync(Buffer.from(' \n\r\n\t \n'))],
    ['blank first window, content after', gzipSync(Buffer.concat([Buffer.alloc(600_000, 0x20), lines(3)]))],
    ['incompressible and large', noise],
  ]
}

/** The native check (fails the test where it cannot load: the edge must not fall back here). */
async function loadNativeGzipCheck(concurrency?: number): Promise<GzipCheck> {
  const checker = await openNativeGzipChecker(concurrency === undefined ? {} : { concurrency })
  return (body, maxBytes) => checker.check(body, maxBytes)
}

describe('the gzip check through zlib itself', () => {
  it('loads here (Linux, koffi, the Node binary exports its zlib): the edge does not fall back', async () => {
    await expect(openNativeGzipChecker()).resolves.toBeDefined()
  })

  it('answers every body as node:zlib does, under limits below, at and above its size', async () => {
    const native = await loadNativeGzipCheck()
    for (const [name, body] of corpus()) {
      const reference = await checkGzip(body, 64 * MB)
      expect({ name, check: await native(body, 64 * MB) }).toEqual({ name, check: reference })
      if (reference.kind !== 'ok') continue
      for (const limit of [reference.inflatedBytes - 1, reference.inflatedBytes, reference.inflatedBytes + 1])
        if (limit > 0)
          expect({ name, limit, check: await native(body, limit) }).toEqual({
            name,
            limit,
            check: await checkGzip(body, limit),
          })
    }
  })

  it('gives node:zlib answers for any bytes', async () => {
    const native = await loadNativeGzipCheck()
    const seed = gzipSync(lines(300))
    await fc.assert(
      fc.asyncProperty(
        fc.oneof(
          fc.uint8Array({ maxLength: 2000 }),
          // A valid body with a stretch of it overwritten: most such bodies fail their CRC or inflate.
          fc
            .record({
              at: fc.nat({ max: seed.length - 1 }),
              bytes: fc.uint8Array({ minLength: 1, maxLength: 8 }),
            })
            .map(({ at, bytes }) => {
              const copy = Buffer.from(seed)
              copy.set(bytes.subarray(0, seed.length - at), at)
              return copy
            }),
        ),
        async (bytes) => {
          const body = Buffer.from(bytes)
          expect(await native(body, MB)).toEqual(await checkGzip(body, MB))
        },
      ),
      { numRuns: 300 },
    )
  })

  it('keeps every answer right with more checks at once than it inflates at once', async () => {
    const native = await loadNativeGzipCheck(3)
    const texts = Array.from({ length: 60 }, (_, i) => lines(500 + i * 37, i))
    const bodies = texts.map((text, i) => (i % 7 === 3 ? gzipSync(text).subarray(0, 100) : gzipSync(text)))
    const checks = await Promise.all(bodies.map((body) => native(body, 16 * MB)))
    expect(checks).toEqual(
      texts.map((text, i) =>
        i % 7 === 3 ? { kind: 'invalid' } : { kind: 'ok', inflatedBytes: text.length, hasContent: true },
      ),
    )
  })

  it('opens no more inflate streams than its concurrency, and frees the idle ones after a quiet spell', async () => {
    const checker = await openNativeGzipChecker({ concurrency: 2, idleReleaseMs: 150 })
    const body = gzipSync(lines(20_000))
    const checks = await Promise.all(Array.from({ length: 9 }, () => checker.check(body, 64 * MB)))
    expect(checks.every((check) => check.kind === 'ok')).toBe(true)
    expect(checker.openContexts).toBe(2)
    // Checks keep coming: nothing is freed while they do.
    for (let i = 0; i < 3; i++) {
      await new Promise((resolve) => setTimeout(resolve, 60))
      await checker.check(body, 64 * MB)
      expect(checker.openContexts).toBeGreaterThan(0)
    }
    await expect.poll(() => checker.openContexts, { timeout: 2000, interval: 50 }).toBe(0)
    // And opened again on demand.
    expect(await checker.check(body, 64 * MB)).toMatchObject({ kind: 'ok' })
    expect(checker.openContexts).toBe(1)
  })

  it('leaves the caller its body as it was', async () => {
    const check = createGzipCheck()
    const body = gzipSync(lines(5000))
    const copy = Buffer.from(body)
    expect(await check(body, 64 * MB)).toMatchObject({ kind: 'ok' })
    expect(body.equals(copy)).toBe(true)
  })
})

describe('an upload whose gzip check cannot run', () => {
  it('is answered 503 with Retry-After, so the client sends it again', async () => {
    const failing = () => Promise.reject(new Error('koffi: too many asynchronous calls are running'))
    const request: UploadRequest = { header: () => undefined, readBody: async () => gzipSync(lines(10)) }
    const refusal = await readUploadBody(
      request,
      'gzip',
      { maxBytes: MB, maxInflatedBytes: MB },
      failing,
    ).then(
      () => undefined,
      (err: unknown) => err,
    )
    expect(refusal).toBeInstanceOf(SluiceError)
    expect(refusal).toMatchObject({ status: 503, headers: { 'Retry-After': '1' } })
    expect((refusal as Error).cause).toMatchObject({
      message: 'koffi: too many asynchronous calls are running',
    })
  })
})
