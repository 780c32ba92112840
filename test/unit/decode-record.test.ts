import { describe, expect, it } from 'vitest'
import { z } from 'zod'
import { decodeJsonRecord } from '../../pipelines/failures/decode-record.ts'
import { decodeCountRequest, encodeCountRequest } from '../../pipelines/audiences/count-requests.ts'

const schema = z.object({ id: z.number().int(), name: z.string() })

describe('decodeJsonRecord', () => {
  it('returns the parsed value of a record that matches', () => {
    expect(decodeJsonRecord(Buffer.from('{"id":3,"name":"a"}'), schema, 'thing')).toEqual({
      ok: true,
      value: { id: 3, name: 'a' },
    })
  })

  it('names the kind when the bytes are not JSON', () => {
    expect(decodeJsonRecord(Buffer.from('{"id":'), schema, 'thing')).toEqual({
      ok: false,
      reason: 'thing is not JSON',
    })
  })

  it('names every failing path', () => {
    const decoded = decodeJsonRecord(Buffer.from('{"id":1.5}'), schema, 'thing')
    expect(decoded.ok).toBe(false)
    if (decoded.ok) return
    expect(decoded.reason).toMatch(/^malformed thing: /)
    expect(decoded.reason).toContain('id: ')
    expect(decoded.reason).toContain('name: ')
  })

  it('names the root when the value is not an object', () => {
    const decoded = decodeJsonRecord(Buffer.from('7'), schema, 'thing')
    expect(decoded).toMatchObject({ ok: false })
    if (!decoded.ok) expect(decoded.reason).toContain('(root): ')
  })
})

describe('count requests round-trip through the bus encoding', () => {
  it('decodes what it encodes, and refuses a foreign record', () => {
    const request = {
      v: 1,
      org_id: 1,
      app_id: 'app',
      audience_id: 12,
      requested_at: 5,
      reason: 'create',
    } as const
    const decoded = decodeCountRequest(encodeCountRequest(request))
    expect(decoded.ok).toBe(true)
    if (decoded.ok) expect(decoded.request).toMatchObject({ audience_id: 12, reason: 'create' })
    expect(decodeCountRequest({ value: Buffer.from('{"audience_id":"x"}') })).toMatchObject({ ok: false })
  })
})
