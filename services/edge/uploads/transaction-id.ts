import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto'

/**
 * Upload transaction ids carry their org and receipt time, signed, so that any edge can answer
 * "queued" for a transaction the workers have not reached yet without a write on the hot path,
 * and 404 for an id it never issued. Layout (base64url): 8 bytes receipt ms | 6 bytes org |
 * 8 random bytes | 10 bytes HMAC-SHA256 of the rest.
 */
const PAYLOAD = 22
const MAC = 10

export interface TransactionInfo {
  orgId: number
  receivedAt: number
}

export function mintTransactionId(key: Buffer, orgId: number, receivedAt: number): string {
  const payload = Buffer.alloc(PAYLOAD)
  payload.writeBigUInt64BE(BigInt(receivedAt), 0)
  payload.writeUIntBE(orgId, 8, 6)
  randomBytes(8).copy(payload, 14)
  return Buffer.concat([payload, mac(key, payload)]).toString('base64url')
}

const SHAPE = /^[A-Za-z0-9_-]{43}$/

/**
 * Whether `id` has the shape of an id Sluice issues (43 base64url characters). Ids are
 * case-sensitive tokens, not UUIDs: no other spelling names the same upload, so a receipt request
 * in another shape is malformed (400) and one of the right shape that was never issued is unknown
 * (404).
 */
export function isTransactionIdShaped(id: string): boolean {
  return SHAPE.test(id)
}

/** The org and receipt time of an id this deployment issued; undefined for anything else. */
export function parseTransactionId(key: Buffer, id: string): TransactionInfo | undefined {
  if (!SHAPE.test(id)) return undefined
  const raw = Buffer.from(id, 'base64url')
  if (raw.length !== PAYLOAD + MAC) return undefined
  const payload = raw.subarray(0, PAYLOAD)
  if (!timingSafeEqual(raw.subarray(PAYLOAD), mac(key, payload))) return undefined
  return { receivedAt: Number(payload.readBigUInt64BE(0)), orgId: payload.readUIntBE(8, 6) }
}

/** The signing key: derived from a deployment secret shared by every edge (the admin token). */
export function transactionKey(secret: string): Buffer {
  return createHmac('sha256', secret).update('sluice transaction ids v1').digest()
}

function mac(key: Buffer, payload: Buffer): Buffer {
  return createHmac('sha256', key).update(payload).digest().subarray(0, MAC)
}
