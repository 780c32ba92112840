import { createHmac, timingSafeEqual } from 'node:crypto'

/**
 * Signed, expiring links to export files (pure but for the HMAC). A link is
 * `/files/<path>?expires=<unix seconds>&sig=<hex>`, where sig is HMAC-SHA256 over
 * `v1\n<path>\n<expires>` with the deployment's link key. The path signed is the normalised one,
 * and the file route normalises what it is given the same way before it checks, so a link can
 * neither be altered nor point outside the exports root.
 */

export const LINK_PREFIX = '/files/'
/** Every export file lives under this folder of the files port. */
export const EXPORTS_ROOT = 'exports/'

const SIG_HEX = /^[0-9a-f]{64}$/

/** The HMAC key of links: derived from the admin token (the same on every edge of a deployment). */
export function linkKeyFromAdminToken(adminToken: string): Buffer {
  return createHmac('sha256', adminToken).update('sluice export links v1').digest()
}

/**
 * A relative path under the exports root, or undefined: no empty, `.` or `..` segment, no
 * backslash, NUL or other control character, nothing absolute. Applied to the path once decoded.
 */
export function normaliseExportPath(path: string): string | undefined {
  if (!path.startsWith(EXPORTS_ROOT)) return undefined
  // eslint-disable-next-line no-control-regex
  if (/[\u0000-\u001f\u007f\\]/.test(path)) return undefined
  const segments = path.split('/')
  for (const segment of segments) {
    if (segment === '' || segment === '.' || segment === '..') return undefined
    if (!/^[A-Za-z0-9._-]+$/.test(segment)) return undefined
  }
  return path
}

function signature(key: Buffer, path: string, expires: number): string {
  return createHmac('sha256', key).update(`v1\n${path}\n${expires}`).digest('hex')
}

/** The path and query of a link to `path`, valid until `expires` (unix seconds). */
export function signLink(key: Buffer, path: string, expires: number): string {
  const normal = normaliseExportPath(path)
  if (!normal) throw new Error(`not an export file path: ${path}`)
  const sig = signature(key, normal, expires)
  return `${LINK_PREFIX}${normal}?expires=${expires}&sig=${sig}`
}

export type LinkCheck = { ok: true; path: string } | { ok: false; status: 403 | 410; reason: string }

/**
 * Checks a link as requested: `rawPath` is the request path after `/files/`, still
 * percent-encoded. It is decoded once and normalised; an encoded `..` (`%2e%2e`), `%2f` or
 * anything else the normalisation refuses is refused as a tampered link. The signature is
 * compared in constant time; an expired link is refused even when its signature is right.
 */
export function checkLink(
  key: Buffer,
  rawPath: string,
  expiresText: string | undefined,
  sigText: string | undefined,
  nowSeconds: number,
): LinkCheck {
  const tampered = (reason: string): LinkCheck => ({ ok: false, status: 403, reason })
  let decoded: string
  try {
    decoded = decodeURIComponent(rawPath)
  } catch {
    return tampered('malformed link path')
  }
  // A separator that arrived encoded would let one segment pose as two: refused.
  if (decoded !== rawPath && /%2f|%5c|%00/i.test(rawPath)) return tampered('malformed link path')
  const path = normaliseExportPath(decoded)
  if (!path) return tampered('not an export file')
  if (expiresText === undefined || !/^[0-9]{1,12}$/.test(expiresText)) return tampered('malformed link')
  if (sigText === undefined || !SIG_HEX.test(sigText)) return tampered('malformed link signature')
  const expires = Number(expiresText)
  const expected = Buffer.from(signature(key, path, expires), 'hex')
  const given = Buffer.from(sigText, 'hex')
  if (!timingSafeEqual(expected, given)) return tampered('invalid link signature')
  if (expires < nowSeconds)
    return { ok: false, status: 410, reason: 'this link has expired; request the export again' }
  return { ok: true, path }
}
