import { describe, expect, it } from 'vitest'
import { decodeRecord, encodeRecord } from '../../pipelines/connectors/bus/local-log/record-codec.ts'
import { UploadBuffers } from '../../services/edge/uploads/upload-buffers.ts'

const KB = 1024

describe('upload buffers used again from one upload to the next', () => {
  it('gives a body its exact size with the bus headroom before it: the record is written in place', () => {
    const buffers = new UploadBuffers({ maxBytes: 256 * KB, maxIdleBytes: 4 * 1024 * KB })
    const text = '{"event":"a"}\n'.repeat(3000)
    const body = buffers.take(Buffer.byteLength(text))
    expect(body.length).toBe(Buffer.byteLength(text))
    body.write(text)

    const record = encodeRecord({ key: 'k', value: body, headers: { tx: 't' } }, 7)
    expect(record.buffer).toBe(body.buffer)
    expect(record.byteOffset + record.length).toBe(body.byteOffset + body.length)
    const decoded = decodeRecord('uploads', 0, 0, Buffer.from(record))
    expect(decoded.value.toString()).toBe(text)
    expect(decoded.headers).toEqual({ tx: 't' })
  })

  it('hands memory given back to the next body of the same size step, with fresh headroom', () => {
    const buffers = new UploadBuffers({ maxBytes: 256 * KB, maxIdleBytes: 4 * 1024 * KB })
    const first = buffers.take(70 * KB)
    first.fill(1)
    encodeRecord({ value: first, headers: { a: 'b' } }, 1)
    buffers.give(first)
    expect(buffers.idleMemoryBytes).toBeGreaterThanOrEqual(80 * KB)

    // 70 KB and 72 KB round up to the same 80 KB: the same memory, and its room can be used again.
    const second = buffers.take(72 * KB)
    expect(second.buffer).toBe(first.buffer)
    expect(second.length).toBe(72 * KB)
    expect(buffers.idleMemoryBytes).toBe(0)
    const record = encodeRecord({ value: second, headers: { a: 'c' } }, 2)
    expect(record.buffer).toBe(second.buffer)

    // A size in another step gets memory of its own.
    const other = buffers.take(100 * KB)
    expect(other.buffer).not.toBe(first.buffer)
  })

  it('keeps no body below one step or above the limit, and ignores what it did not lend', () => {
    const buffers = new UploadBuffers({ maxBytes: 256 * KB, maxIdleBytes: 4 * 1024 * KB })
    const small = buffers.take(2 * KB)
    const large = buffers.take(300 * KB)
    expect(small.length).toBe(2 * KB)
    expect(large.length).toBe(300 * KB)
    buffers.give(small)
    buffers.give(large)
    buffers.give(Buffer.alloc(64 * KB))
    expect(buffers.idleMemoryBytes).toBe(0)
    // Each still carries the headroom (allocated as before).
    expect(encodeRecord({ value: large }, 1).buffer).toBe(large.buffer)
  })

  it('takes a buffer back once: a second give does not put the memory in twice', () => {
    const buffers = new UploadBuffers({ maxBytes: 256 * KB, maxIdleBytes: 4 * 1024 * KB })
    const body = buffers.take(40 * KB)
    buffers.give(body)
    const idle = buffers.idleMemoryBytes
    buffers.give(body)
    expect(buffers.idleMemoryBytes).toBe(idle)
    const a = buffers.take(40 * KB)
    const b = buffers.take(40 * KB)
    expect(a.buffer).toBe(body.buffer)
    expect(b.buffer).not.toBe(a.buffer)
  })

  it('keeps at most maxIdleBytes idle; what comes back past it is left to the collector', () => {
    const buffers = new UploadBuffers({ maxBytes: 256 * KB, maxIdleBytes: 200 * KB, stepBytes: 16 * KB })
    const bodies = [buffers.take(60 * KB), buffers.take(60 * KB), buffers.take(60 * KB)]
    for (const body of bodies) buffers.give(body)
    // Each is 64 KB of body memory and 1 KB of headroom: three would be 195 KB, a fourth too many.
    expect(buffers.idleMemoryBytes).toBe(3 * (64 + 1) * KB)
    buffers.give(buffers.take(60 * KB))
    const more = [buffers.take(60 * KB), buffers.take(60 * KB), buffers.take(60 * KB), buffers.take(60 * KB)]
    for (const body of more) buffers.give(body)
    expect(buffers.idleMemoryBytes).toBe(3 * (64 + 1) * KB)
  })
})
