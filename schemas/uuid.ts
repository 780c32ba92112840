/**
 * One spelling per id. Clients print the same UUID in several ways (lower or upper case, with or
 * without dashes), and an id the pipelines deduplicate or join on must compare equal however it
 * was printed: otherwise a retry in another spelling is counted twice, and one device splits into
 * two. The canonical form of a 128-bit UUID is lower case 8-4-4-4-12.
 *
 * Braces (Microsoft's `{…}` spelling) are not part of an id: the spec allows an event uuid only hex
 * digits and dashes, so one in braces is refused; a free-form device id in braces is kept as sent.
 *
 * Migration 009 applies the same rule in SQL to the ids stored before it; its test compares the
 * two on every spelling.
 */

const HEX_AND_DASHES = /^[0-9a-fA-F-]+$/
const CANONICAL = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/

/**
 * The canonical form (lower case 8-4-4-4-12) of a 128-bit UUID written as 32 hex digits in either
 * case with dashes anywhere; undefined for anything else.
 */
export function canonicalUuid128(s: string): string | undefined {
  if (isCanonicalUuid128(s)) return s
  if (s.length < 32 || !HEX_AND_DASHES.test(s)) return undefined
  const hex = s.replaceAll('-', '').toLowerCase()
  if (hex.length !== 32) return undefined
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`
}

/** `s` is a 128-bit UUID in its canonical spelling already (as nearly every client sends it). */
export function isCanonicalUuid128(s: string): boolean {
  return s.length === 36 && CANONICAL.test(s)
}

/**
 * An event uuid (server events and SDK rows) as it is deduplicated and stored: a 128-bit UUID in
 * its canonical form; any other id the spec allows (32 to 75 hex digits and dashes) in lower case.
 * Hex digits are case-insensitive, so lower-casing never merges two distinct ids.
 */
export function canonicalEventUuid(s: string): string {
  return canonicalUuid128(s) ?? s.toLowerCase()
}

/**
 * A free-form device id (install, device or session uuid of the SDK): canonical when it is a
 * 128-bit UUID, else exactly as sent (such ids may be case-sensitive).
 */
export function canonicalDeviceId(s: string): string {
  return canonicalUuid128(s) ?? s
}
