import { hash, randomBytes, timingSafeEqual } from 'node:crypto'

/** API keys are public identifiers; secrets are 256-bit random strings shown once. */
export function generateApiKey(): string {
  return randomBytes(12).toString('hex')
}

export function generateSecret(): string {
  return randomBytes(32).toString('base64url')
}

export function generateAppKey(): string {
  return randomBytes(10).toString('hex')
}

/**
 * Secrets are uniformly random and long, so a keyed fast hash is enough (no password stretching
 * needed); binding the key into the hash stops a stored hash being reused under another key.
 */
export function hashSecret(apiKey: string, secret: string): string {
  return secretDigest(apiKey, secret).toString('hex')
}

function secretDigest(apiKey: string, secret: string): Buffer {
  return hash('sha256', `sluice:v1:${apiKey}:${secret}`, 'buffer')
}

/**
 * Constant-time comparison of two strings of any length (compares fixed-size digests). One-shot
 * hashes: a Hash object per call cost the edge ~5 % of its time per upload (three per request).
 */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(hash('sha256', a, 'buffer'), hash('sha256', b, 'buffer'))
}

const DIGEST_HEX = /^[0-9a-f]{64}$/

/**
 * Whether `secret` is the one `storedHash` (hashSecret's hex digest) was made from. Both sides
 * are 32-byte digests, so one hash and a direct constant-time compare do: safeEqual's hashing of
 * both sides (for strings of any length) cost two more SHA-256 per request. A stored value that
 * is not a digest (its length and alphabet are no secret) never matches.
 */
export function verifySecret(apiKey: string, secret: string, storedHash: string): boolean {
  if (!DIGEST_HEX.test(storedHash)) return false
  return timingSafeEqual(secretDigest(apiKey, secret), Buffer.from(storedHash, 'hex'))
}

/**
 * An Authorization header whose secret was verified against `secretHash`, the key's stored hash at
 * the time. A connection remembers the last one it presented, so the next request on it carrying
 * the same header (a client sends the same credentials on every upload of a keep-alive connection)
 * is matched by its bytes, without parsing it or hashing its secret again: ~12 µs of the edge's
 * main thread per upload (measured at `ce8ceac`; docs/performance.md, "Edge"). The match is
 * constant-time in the header's content, since a proxy may carry many clients' requests on one
 * connection.
 */
export class VerifiedCredentials {
  /** Where a presented header is written to be compared: no buffer allocated per request. */
  private readonly presented: Buffer

  private constructor(
    private readonly header: Buffer,
    readonly apiKey: string,
    readonly secretHash: string,
  ) {
    this.presented = Buffer.alloc(header.length)
  }

  static of(authorization: string, apiKey: string, secretHash: string): VerifiedCredentials {
    return new VerifiedCredentials(Buffer.from(authorization), apiKey, secretHash)
  }

  /** Whether `authorization` is, byte for byte, the header that was verified. */
  matches(authorization: string): boolean {
    // Only the length is compared before the constant-time part, as before. The event loop runs
    // nothing else between the write and the compare, so one scratch buffer serves every call.
    if (Buffer.byteLength(authorization) !== this.header.length) return false
    this.presented.write(authorization)
    return timingSafeEqual(this.presented, this.header)
  }
}

/** Parse `Authorization: Basic base64(user:pass)`; undefined when absent or malformed. */
export function parseBasicAuth(header: string | undefined): { user: string; password: string } | undefined {
  if (!header) return undefined
  const match = /^Basic\s+([A-Za-z0-9+/=_-]+)\s*$/i.exec(header)
  if (!match?.[1]) return undefined
  const decoded = Buffer.from(match[1], 'base64').toString('utf8')
  const colon = decoded.indexOf(':')
  if (colon < 0) return undefined
  return { user: decoded.slice(0, colon), password: decoded.slice(colon + 1) }
}
