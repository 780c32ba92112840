import { createHmac } from 'node:crypto'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import {
  mintTransactionId,
  parseTransactionId,
  transactionKey,
  TransactionKey,
} from '../../services/edge/uploads/transaction-id.ts'

/** The id as the first implementation laid it out (createHmac, BigInt time), for comparison. */
function reference(key: TransactionKey, id: string): string {
  const raw = Buffer.from(id, 'base64url')
  const payload = raw.subarray(0, 22)
  return Buffer.concat([
    payload,
    createHmac('sha256', key.key).update(payload).digest().subarray(0, 10),
  ]).toString('base64url')
}

describe('transaction ids', () => {
  const key = transactionKey('admin-token-of-realistic-length')
  const other = transactionKey('another deployment')

  it('carries org and receipt time, signed with the HMAC-SHA256 createHmac computes', () => {
    for (const [org, at] of [
      [1, 1_795_300_000_123],
      [281_474_976_710_655, 0],
      [42, 2 ** 52 + 7],
    ] as const) {
      const id = mintTransactionId(key, org, at)
      expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/)
      const raw = Buffer.from(id, 'base64url')
      expect(raw.readBigUInt64BE(0)).toBe(BigInt(at))
      expect(raw.readUIntBE(8, 6)).toBe(org)
      expect(reference(key, id)).toBe(id)
      expect(parseTransactionId(key, id)).toEqual({ orgId: org, receivedAt: at })
    }
  })

  it('refuses ids of another key, altered ids and other shapes', () => {
    const id = mintTransactionId(key, 7, 1_795_300_000_000)
    expect(parseTransactionId(other, id)).toBeUndefined()
    // The other key's ids fail under this one, and alternating keys keeps both verifiable.
    const theirs = mintTransactionId(other, 7, 1_795_300_000_000)
    expect(parseTransactionId(key, theirs)).toBeUndefined()
    expect(parseTransactionId(other, theirs)).toEqual({ orgId: 7, receivedAt: 1_795_300_000_000 })
    expect(parseTransactionId(key, id)).toEqual({ orgId: 7, receivedAt: 1_795_300_000_000 })
    const flipped = (id[5] === 'A' ? 'B' : 'A') + ''
    expect(parseTransactionId(key, id.slice(0, 5) + flipped + id.slice(6))).toBeUndefined()
    expect(parseTransactionId(key, id.slice(1))).toBeUndefined()
  })

  it('computes the HMAC-SHA256 createHmac computes, for any key of up to 64 bytes and payload', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 64 }),
        fc.array(fc.uint8Array({ minLength: 22, maxLength: 22 }), { minLength: 1, maxLength: 4 }),
        (keyBytes, messages) => {
          const k = new TransactionKey(Buffer.from(keyBytes))
          // Several messages under one key: the scratch pads must not carry one into the next.
          for (const m of messages) {
            const message = Buffer.from(m)
            expect(k.mac(message).toString('hex')).toBe(
              createHmac('sha256', Buffer.from(keyBytes)).update(message).digest('hex'),
            )
          }
        },
      ),
    )
    expect(() => new TransactionKey(Buffer.alloc(65))).toThrow(RangeError)
    expect(() => key.mac(Buffer.alloc(21))).toThrow(RangeError)
  })

  it('draws fresh random bytes for every id, across refills of the random pool', () => {
    const ids = new Set<string>()
    const randoms = new Set<string>()
    for (let i = 0; i < 2_000; i++) {
      const id = mintTransactionId(key, 1, 1_795_300_000_000)
      ids.add(id)
      randoms.add(Buffer.from(id, 'base64url').subarray(14, 22).toString('hex'))
    }
    expect(ids.size).toBe(2_000)
    expect(randoms.size).toBe(2_000)
  })
})
