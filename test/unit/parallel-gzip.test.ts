import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { Readable } from 'node:stream'
import { buffer } from 'node:stream/consumers'
import { gunzipSync, gzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { ParallelGzip } from '../../pipelines/exports/parallel-gzip.ts'

/** Log-like lines: repetitive JSON with random ids, so blocks refer back across their borders. */
function lines(count: number): Buffer {
  let text = ''
  for (let i = 0; i < count; i++)
    text += `{"type":"e","uuid":"${randomBytes(16).toString('hex')}","name":"view_item","n":${i % 97},"country":"us"}\n`
  return Buffer.from(text)
}

async function gzipOf(input: Buffer, options: ConstructorParameters<typeof ParallelGzip>[0], chunk = 65_536) {
  const pieces: Buffer[] = []
  for (let i = 0; i < input.length; i += chunk) pieces.push(input.subarray(i, i + chunk))
  return buffer(Readable.from(pieces).pipe(new ParallelGzip(options)))
}

describe('ParallelGzip', () => {
  it('writes one gzip member that gunzip restores byte for byte, across many blocks', async () => {
    const input = lines(60_000)
    const out = await gzipOf(input, { level: 6, blockBytes: 256 * 1024, parallel: 3 })
    expect(input.length).toBeGreaterThan(10 * 256 * 1024)
    expect(gunzipSync(out).equals(input)).toBe(true)
    // One member: header once, at the start.
    expect(out.subarray(0, 3)).toEqual(Buffer.from([0x1f, 0x8b, 0x08]))
    expect(out.indexOf(Buffer.from([0x1f, 0x8b, 0x08, 0x00, 0x00, 0x00, 0x00, 0x00]), 1)).toBe(-1)
    // The trailer: CRC-32 and size of the whole input.
    expect(out.readUInt32LE(out.length - 4)).toBe(input.length)
    expect(out.readUInt32LE(out.length - 8)).toBe(gzipSync(input).readUInt32LE(gzipSync(input).length - 8))
  })

  it('compresses about as well as one stream (each block sees the 32 KB before it)', async () => {
    const input = lines(40_000)
    const ours = await gzipOf(input, { level: 6, blockBytes: 128 * 1024 })
    const single = gzipSync(input, { level: 6 })
    expect(ours.length).toBeLessThan(single.length * 1.02)
  })

  it('handles empty input, one small chunk, and input that ends exactly on a block', async () => {
    expect(gunzipSync(await gzipOf(Buffer.alloc(0), { level: 6 })).length).toBe(0)
    const small = Buffer.from('{"a":1}\n')
    expect(gunzipSync(await gzipOf(small, { level: 6 })).equals(small)).toBe(true)
    const exact = lines(5_000).subarray(0, 64 * 1024)
    expect(
      gunzipSync(await gzipOf(exact, { level: 1, blockBytes: 16 * 1024 }, 16 * 1024)).equals(exact),
    ).toBe(true)
  })

  it('is read whole by the gzip command line tool', async () => {
    const input = lines(20_000)
    const out = await gzipOf(input, { level: 6, blockBytes: 64 * 1024 })
    expect(execFileSync('gzip', ['-dc'], { input: out, maxBuffer: 64 * 1024 * 1024 }).equals(input)).toBe(
      true,
    )
  })
})
