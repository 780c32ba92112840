import { describe, expect, it } from 'vitest'
import { allocWithHeadroom, takeHeadroom } from '../../pipelines/connectors/bus/headroom.ts'
import {
  decodeRecord,
  encodeRecord,
  RecordEncoder,
} from '../../pipelines/connectors/bus/local-log/record-codec.ts'

const headers = { tx: 'AAABogBRPT8AAAAAAAEKlMGxh5LfGssBb0miBj6fHRo', org: '42', enc: 'identity' }

/** Whether `record` is the body's own memory with the header just before it (no copy). */
function inBodyMemory(record: Buffer, body: Buffer): boolean {
  return record.buffer === body.buffer && record.byteOffset + record.length === body.byteOffset + body.length
}

function bodyWithHeadroom(text: string): Buffer {
  const body = allocWithHeadroom(Buffer.byteLength(text))
  body.write(text)
  return body
}

describe('records written into the headroom of a body', () => {
  it('lays out the same bytes as a copied record, sharing the body memory instead of copying it', () => {
    const text = '{"event":"a"}\n'.repeat(5000)
    const body = bodyWithHeadroom(text)
    const message = { key: 'the-key', value: body, headers }
    const inPlace = encodeRecord(message, 1_700_000_000_123)
    const copied = new RecordEncoder().encode({ ...message, value: Buffer.from(text) }, 1_700_000_000_123)

    expect(inPlace.equals(copied)).toBe(true)
    expect(inBodyMemory(inPlace, body)).toBe(true)
    const record = decodeRecord('uploads', 0, 7, Buffer.from(inPlace))
    expect(record.value.toString()).toBe(text)
    expect(record.key).toBe('the-key')
    expect(record.headers).toEqual(headers)
    expect(record.timestamp).toBe(1_700_000_000_123)
    // The body itself is untouched.
    expect(body.toString()).toBe(text)
  })

  it('uses the room once: a second record of the same body is a copy', () => {
    const body = bodyWithHeadroom('x\n')
    const first = encodeRecord({ value: body }, 1)
    const second = encodeRecord({ value: body }, 2)
    expect(inBodyMemory(first, body)).toBe(true)
    expect(inBodyMemory(second, body)).toBe(false)
    expect(decodeRecord('t', 0, 0, Buffer.from(second)).value.toString()).toBe('x\n')
    expect(decodeRecord('t', 0, 0, Buffer.from(first)).timestamp).toBe(1)
  })

  it('copies a body without headroom, or one whose header does not fit in the room', () => {
    const plain = Buffer.from('plain body')
    const record = encodeRecord({ value: plain, headers }, 5)
    expect(inBodyMemory(record, plain)).toBe(false)
    expect(decodeRecord('t', 0, 0, Buffer.from(record)).value.toString()).toBe('plain body')

    const small = bodyWithHeadroom('y')
    expect(takeHeadroom(small, 4096)).toBeUndefined()
    const big = encodeRecord({ value: small, headers: { h: 'z'.repeat(2000) } }, 6)
    expect(inBodyMemory(big, small)).toBe(false)
    expect(decodeRecord('t', 0, 0, Buffer.from(big)).headers).toEqual({ h: 'z'.repeat(2000) })
  })
})
