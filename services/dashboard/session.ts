import { createCipheriv, createDecipheriv, hkdfSync, randomBytes } from 'node:crypto'
import { safeEqual } from '../control/credentials.ts'

/** Who signed in: an operator (the admin token: every org) or an org's API key (that org, its scopes). */
export type Signed =
  | { kind: 'admin'; token: string }
  | { kind: 'key'; apiKey: string; secret: string; orgId: number; scopes: string[] }

/** An operator's keys, one per org it opened, minted through the admin API for the public APIs. */
export type OrgKeys = Record<string, { apiKey: string; secret: string }>

export interface Session {
  who: Signed
  /** The token every write must carry in its form (CSRF). */
  csrf: string
  /** Milliseconds since the epoch after which the session is over. */
  expires: number
  orgKeys?: OrgKeys
}

export const SESSION_COOKIE = 'sluice_session'
/** The sign-in form's CSRF cookie (double submit), before there is a session to bind a token to. */
export const SIGN_IN_COOKIE = 'sluice_sign_in'
export const SESSION_HOURS = 8

/**
 * Sessions sealed into their cookie with AES-256-GCM: the credentials travel only inside it,
 * unreadable and unforgeable without the key, so any edge that shares the admin token (the key is
 * derived from it) reads any session, and nothing is stored server side. Without an admin token the
 * key is random per process (sessions last as long as the edge).
 */
export class SessionSealer {
  private readonly key: Buffer

  constructor(adminToken: string | undefined) {
    this.key = adminToken
      ? Buffer.from(hkdfSync('sha256', adminToken, 'sluice-dashboard', 'session cookie', 32))
      : randomBytes(32)
  }

  seal(session: Session): string {
    const iv = randomBytes(12)
    const cipher = createCipheriv('aes-256-gcm', this.key, iv)
    const body = Buffer.concat([cipher.update(JSON.stringify(session), 'utf8'), cipher.final()])
    return Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64url')
  }

  /** The session of a cookie, or undefined when it is missing, forged, tampered with or expired. */
  open(cookie: string | undefined, now = Date.now()): Session | undefined {
    if (!cookie || cookie.length > 8192) return undefined
    try {
      const raw = Buffer.from(cookie, 'base64url')
      const decipher = createDecipheriv('aes-256-gcm', this.key, raw.subarray(0, 12))
      decipher.setAuthTag(raw.subarray(12, 28))
      const text = Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')
      const session = JSON.parse(text) as Session
      return session.expires > now ? session : undefined
    } catch {
      return undefined
    }
  }
}

export function newSession(who: Signed, now = Date.now()): Session {
  return { who, csrf: randomBytes(24).toString('base64url'), expires: now + SESSION_HOURS * 3_600_000 }
}

export const newCsrfToken = (): string => randomBytes(24).toString('base64url')

/** A form's CSRF token against the expected one, in constant time. */
export function csrfMatches(expected: string | undefined, given: unknown): boolean {
  return typeof expected === 'string' && typeof given === 'string' && given.length > 0 && safeEqual(given, expected)
}
