import { createHmac, randomFillSync, timingSafeEqual } from 'node:crypto'

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
  const id = Buffer.allocUnsafe(PAYLOAD + MAC)
  id.writeUIntBE(Math.floor(receivedAt / 2 ** 32), 0, 4)
  id.writeUInt32BE(receivedAt >>> 0, 4)
  id.writeUIntBE(orgId, 8, 6)
  randomInto(id, 14, 8)
  macOf(key, id.subarray(0, PAYLOAD)).copy(id, PAYLOAD, 0, MAC)
  return id.toString('base64url')
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
  if (!timingSafeEqual(raw.subarray(PAYLOAD), macOf(key, payload).subarray(0, MAC))) return undefined
  return { receivedAt: Number(payload.readBigUInt64BE(0)), orgId: payload.readUIntBE(8, 6) }
}

/** The signing key: derived from a deployment secret shared by every edge (the admin token). */
export function transactionKey(secret: string): Buffer {
  return createHmac('sha256', secret).update('sluice transaction ids v1').digest()
}

function macOf(key: Buffer, message: Buffer): Buffer {
  // createHmac, not a hand-made HMAC over cached pads: timed alone, the two one-shot hashes saved
  // under 1 µs of a ~5 µs call (4.1 against 4.8), too little for crypto of our own.
  return createHmac('sha256', key).update(message).digest()
}

// Random bytes drawn 4 KB at a time: one randomBytes call per id cost a native call each.
const POOL = 4096
const pool = Buffer.allocUnsafe(POOL)
let poolAt = POOL

function randomInto(target: Buffer, at: number, length: number): void {
  if (poolAt + length > POOL) {
    randomFillSync(pool)
    poolAt = 0
  }
  pool.copy(target, at, poolAt, poolAt + length)
  poolAt += length
}
