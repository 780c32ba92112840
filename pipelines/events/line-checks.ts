import { EVENT_LIMITS, UUID_PATTERN, charLength, charsAtMost } from '../../schemas/events.ts'
import { canonicalEventUuid, isCanonicalUuid128 } from '../../schemas/uuid.ts'
import { abbreviate, wellFormed } from '../text/unicode.ts'

/**
 * Field checks and reject helpers shared by the line validators (server events and SDK rows).
 * Each check returns undefined when the value is fine, else a short message for the sender;
 * nothing is allocated on the happy path.
 */

export interface RejectedLine<R extends string> {
  line: number
  /** The line's uuid when it was a string (even an invalid one, cut to 75 characters), else null. */
  uuid: string | null
  reason: R
  detail: string
}

const MAX_UUID_IN_REJECT = EVENT_LIMITS.uuidMaxChars

export function isJsonObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

export function jsonType(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'an array'
  switch (typeof value) {
    case 'string':
      return 'a string'
    case 'number':
      return 'a number'
    case 'boolean':
      return 'a boolean'
    case 'object':
      return 'an object'
    default:
      return typeof value
  }
}

/** The uuid to report for a refused line. */
export function rejectUuid(value: unknown): string | null {
  if (typeof value !== 'string') return null
  if (value.length <= MAX_UUID_IN_REJECT) return value
  const cut = value.slice(0, MAX_UUID_IN_REJECT)
  // never end on half a surrogate pair
  const last = cut.charCodeAt(cut.length - 1)
  return last >= 0xd800 && last <= 0xdbff ? cut.slice(0, -1) : cut
}

/** A string of min..max characters (code points). */
export function charsProblem(field: string, value: unknown, max: number, min = 1): string | undefined {
  if (typeof value === 'string') {
    if (value.length < min) return min === 1 ? `${field} must not be empty` : `${field} is too short`
    if (charsAtMost(value, max)) return undefined
    return `${field} is longer than ${max} characters (${charLength(value)})`
  }
  if (value === undefined) return `${field} is required`
  return `${field} must be a string, not ${jsonType(value)}`
}

/**
 * An event uuid as the spec allows it: 32 to 75 hex digits and dashes. Canonicalising (schemas/uuid.ts)
 * keeps the length and the alphabet, so the rule holds of the canonical form too.
 */
export function uuidProblem(field: string, value: unknown): string | undefined {
  if (typeof value === 'string') {
    if (UUID_PATTERN.test(value)) return undefined
    const n = value.length
    if (n < EVENT_LIMITS.uuidMinChars || n > EVENT_LIMITS.uuidMaxChars)
      return `${field} must be ${EVENT_LIMITS.uuidMinChars} to ${EVENT_LIMITS.uuidMaxChars} characters, not ${charLength(value)}`
    return `${field} may only contain 0-9, a-f, A-F and -`
  }
  if (value === undefined) return `${field} is required`
  return `${field} must be a string, not ${jsonType(value)}`
}

/**
 * The event uuid as it is deduplicated and stored (`canonicalEventUuid`), or undefined when
 * `value` is not one the spec allows (uuidProblem says why). The canonical spelling, which nearly
 * every client sends, takes one test, not the rule's and then the canonical form's (two regular
 * expressions were ~7 % of the CPU pool's time on a bench body).
 */
export function validEventUuid(value: unknown): string | undefined {
  if (typeof value !== 'string') return undefined
  if (isCanonicalUuid128(value)) return value
  return UUID_PATTERN.test(value) ? canonicalEventUuid(value) : undefined
}

/** An integer within ±(2^53 - 1); JSON `1.0` parses to 1 and is therefore accepted. */
export function integerProblem(field: string, value: unknown): string | undefined {
  if (typeof value === 'number') {
    if (Number.isSafeInteger(value)) return undefined
    if (Number.isInteger(value)) return `${field} is beyond ±${Number.MAX_SAFE_INTEGER}`
    return `${field} must be an integer, not ${value}`
  }
  if (value === undefined) return `${field} is required`
  return `${field} must be an integer number, not ${jsonType(value)}`
}

export interface TimeWindow {
  receivedAt: number
  pastWindowMs: number
  futureWindowMs: number
}

/** `time` within [receivedAt - past, receivedAt + future], bounds inclusive. */
export function windowProblem(field: string, time: number, w: TimeWindow): string | undefined {
  const earliest = w.receivedAt - w.pastWindowMs
  const latest = w.receivedAt + w.futureWindowMs
  if (time >= earliest && time <= latest) return undefined
  return time < earliest
    ? overDetail(field, w.receivedAt - time, w.pastWindowMs, 'in the past')
    : overDetail(field, time - w.receivedAt, w.futureWindowMs, 'in the future')
}

function overDetail(field: string, distance: number, limit: number, where: string): string {
  const got = hoursText(distance)
  const allowed = hoursText(limit)
  // 72 h + 1 ms still prints as "72 hours": say by how much the limit was missed
  const by = got === allowed ? ` (${distance - limit} ms over)` : ''
  return `${field} is ${got} ${where}; the limit is ${allowed}${by}`
}

function hoursText(ms: number): string {
  const hours = Math.round(ms / 36_000) / 100
  return `${hours} hour${hours === 1 ? '' : 's'}`
}

function shortName(name: string): string {
  return abbreviate(name, 40)
}

/**
 * Checks an attributes object and returns it as Record<string, string>, or a message saying what
 * is wrong. Numeric values are formatted with String(n) IN PLACE: pass only an object you own
 * (a fresh JSON.parse result), which saves a copy per event.
 */
export function takeAttributes(value: unknown): Record<string, string> | string {
  if (!isJsonObject(value)) return `attributes must be an object, not ${jsonType(value)}`
  let count = 0
  for (const name in value) {
    if (++count > EVENT_LIMITS.maxAttributes)
      return `attributes: more than ${EVENT_LIMITS.maxAttributes} attributes`
    if (name.length === 0) return 'attributes: an attribute name is empty'
    if (!charsAtMost(name, EVENT_LIMITS.attributeNameMaxChars))
      return `attributes: name "${shortName(name)}" is longer than ${EVENT_LIMITS.attributeNameMaxChars} characters`
    if (name === '__proto__') return 'attributes.__proto__: reserved attribute name'
    const v = value[name]
    if (typeof v === 'string') {
      if (!charsAtMost(v, EVENT_LIMITS.attributeValueMaxChars))
        return `attributes.${shortName(name)}: value longer than ${EVENT_LIMITS.attributeValueMaxChars} characters`
    } else if (typeof v === 'number') {
      if (!Number.isFinite(v)) return `attributes.${shortName(name)}: number out of range`
      const s = String(v)
      if (!charsAtMost(s, EVENT_LIMITS.attributeValueMaxChars))
        return `attributes.${shortName(name)}: value longer than ${EVENT_LIMITS.attributeValueMaxChars} characters`
      value[name] = s
    } else {
      return `attributes.${shortName(name)}: value must be a string or a number, not ${jsonType(v)}`
    }
  }
  return value as Record<string, string>
}

export function rejected<R extends string>(
  line: number,
  uuid: string | null,
  reason: R,
  detail: string,
): RejectedLine<R> {
  // Details quote what was sent; whatever cut them, they leave for the engine well formed.
  return { line, uuid, reason, detail: wellFormed(detail) }
}

export function invalidJson(line: number, err: unknown): RejectedLine<'invalid_json'> {
  const message = err instanceof Error ? err.message : String(err)
  // V8 quotes the start of the input in its message (cutting it anywhere, even inside a
  // surrogate pair); keep details short and whole code points.
  return rejected(line, null, 'invalid_json', abbreviate(message, 160))
}

export function notAnObject(line: number, value: unknown): RejectedLine<'not_an_object'> {
  return rejected(line, null, 'not_an_object', `line is ${jsonType(value)}, not a JSON object`)
}

export function tooLong(line: number, bytes: number, max: number): RejectedLine<'line_too_long'> {
  return rejected(line, null, 'line_too_long', `line is ${bytes} bytes; the limit is ${max}`)
}
