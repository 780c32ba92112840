import type { z } from 'zod'
import {
  EVENT_LIMITS,
  UUID_PATTERN,
  charLength,
  charsAtMost,
  eventLineSchema,
  isEventSchemaUrl,
} from '../../schemas/events.ts'
import { canonicalEventUuid } from '../../schemas/uuid.ts'
import type { SdkRejectReason } from '../sdk/validate-sdk-row.ts'
import { abbreviate, parseJsonWellFormed, wellFormed } from '../text/unicode.ts'
import { forEachLine, utf8LongerThan } from './lines.ts'

/**
 * Pure validation of server-side event upload bodies (runs in piscina workers: synchronous, no
 * I/O, never throws for bad input).
 *
 * The hand-written checks here are the fast path; `validateEventLineBySchema` is the same
 * validation done with the zod schema in schemas/events.ts, and a test compares the two over
 * many generated lines. Change both together.
 */

/** Reasons decided from the line alone. Later stages widen this (unknown_app, duplicate, ...). */
export type EventRejectReason =
  | 'invalid_json'
  | 'not_an_object'
  | 'invalid_schema_url'
  | 'invalid_app_uuid'
  | 'invalid_customer_id'
  | 'invalid_event_name'
  | 'invalid_event_time'
  | 'event_time_out_of_window'
  | 'invalid_uuid'
  | 'invalid_attributes'
  | 'invalid_ltv_change'
  | 'line_too_long'
  | 'duplicate_in_body'

export type RejectReason = EventRejectReason

/** Everything the line validators (server events and SDK rows) can refuse a line for. */
export type LineRejectReason = EventRejectReason | SdkRejectReason

export interface RejectedLine<R extends string = LineRejectReason> {
  line: number
  /** The line's uuid when it was a string (even an invalid one, cut to 75 characters), else null. */
  uuid: string | null
  reason: R
  detail: string
}

export interface ValidEvent {
  line: number
  app_uuid: string
  customer_id: string
  event_name: string
  event_time: number
  uuid: string
  attributes: Record<string, string>
  ltv_change: number
}

export type LineResult =
  | { kind: 'ok'; event: ValidEvent }
  | { kind: 'reject'; line: number; uuid: string | null; reason: RejectReason; detail: string }

export interface ValidateContext {
  /** Epoch ms the upload was received; the event_time window is relative to it. */
  receivedAt: number
  /** event_time may be this far before receivedAt (inclusive). */
  pastWindowMs: number
  /** event_time may be this far after receivedAt (inclusive). */
  futureWindowMs: number
  /** Longer lines (in UTF-8 bytes, terminator excluded) are refused unparsed. No limit if absent. */
  maxLineBytes?: number
  /** Rejected lines kept with their reason (the first ones); the rest are only counted. */
  maxRejects?: number
}

export interface EventBodyResult {
  events: ValidEvent[]
  /** The first `maxRejects` rejected lines, in line order. */
  rejects: RejectedLine<EventRejectReason>[]
  /** Every rejected line, kept or not. */
  rejected: number
  /** Non-blank lines in the body. */
  lines: number
}

export function validateEventLine(text: string, line: number, ctx: ValidateContext): LineResult {
  return toLineResult(
    ctx.maxLineBytes !== undefined && utf8LongerThan(text, ctx.maxLineBytes)
      ? tooLong(line, Buffer.byteLength(text, 'utf8'), ctx.maxLineBytes)
      : checkEventText(text, line, ctx),
  )
}

/**
 * Validates every line of a (decompressed) upload body. A second valid line with the same
 * (app_uuid, uuid) as an earlier valid line is refused as duplicate_in_body; a line refused for
 * another reason does not claim its uuid.
 */
export function validateEventBody(body: Buffer, ctx: ValidateContext): EventBodyResult {
  const { items, rejects, rejected, lines } = validateLines(
    body,
    (text, lineNumber) => checkEventText(text, lineNumber, ctx),
    (event) => `${event.app_uuid}\n${event.uuid}`,
    ctx,
  )
  return { events: items, rejects, rejected, lines }
}

/**
 * The walk both upload validators share: check each line, refuse what cannot be read, and keep
 * the first line of each identity (`identity` of a valid item), refusing later ones as
 * `duplicate_in_body`. Only the first `maxRejects` rejected lines are kept; the others are
 * counted, so a small body of a million bad lines costs a count, not a million reasons.
 */
export function validateLines<T extends { uuid: string }, R extends string>(
  body: Buffer,
  check: (text: string, line: number) => T | RejectedLine<R>,
  identity: (item: T) => string,
  limits: { maxLineBytes?: number | undefined; maxRejects?: number | undefined },
): {
  items: T[]
  rejects: RejectedLine<R | 'duplicate_in_body' | 'line_too_long' | 'invalid_json'>[]
  rejected: number
  lines: number
} {
  const { maxLineBytes, maxRejects = Infinity } = limits
  const items: T[] = []
  const rejects: RejectedLine<R | 'duplicate_in_body' | 'line_too_long' | 'invalid_json'>[] = []
  let rejectedCount = 0
  const reject = (r: RejectedLine<R | 'duplicate_in_body' | 'line_too_long' | 'invalid_json'>) => {
    if (rejectedCount++ < maxRejects) rejects.push(r)
  }
  const seen = new Map<string, number>()
  const lines = forEachLine(
    body,
    {
      line(text, lineNumber) {
        const result = check(text, lineNumber)
        if ('reason' in result) {
          reject(result)
          return
        }
        const key = identity(result)
        const first = seen.get(key)
        if (first !== undefined) {
          reject(rejected(lineNumber, result.uuid, 'duplicate_in_body', `uuid already used on line ${first}`))
          return
        }
        seen.set(key, lineNumber)
        items.push(result)
      },
      refused(lineNumber, why, bytes) {
        reject(
          why === 'line_too_long'
            ? tooLong(lineNumber, bytes, maxLineBytes ?? Infinity)
            : rejected(lineNumber, null, 'invalid_json', 'line is not valid UTF-8'),
        )
      },
    },
    maxLineBytes,
  )
  return { items, rejects, rejected: rejectedCount, lines }
}

// ---------------------------------------------------------------------------------------------
// Fast path

type EventCheck = ValidEvent | RejectedLine<EventRejectReason>

function checkEventText(text: string, line: number, ctx: ValidateContext): EventCheck {
  let value: unknown
  try {
    value = parseJsonWellFormed(text)
  } catch (err) {
    return invalidJson(line, err)
  }
  return checkEventValue(value, line, ctx)
}

function checkEventValue(value: unknown, line: number, ctx: ValidateContext): EventCheck {
  if (!isJsonObject(value)) return notAnObject(line, value)
  const o = value
  const uuid = o.uuid
  let problem = schemaUrlProblem(o.schema_url)
  if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'invalid_schema_url', problem)
  const appUuid = o.app_uuid
  problem = charsProblem('app_uuid', appUuid, EVENT_LIMITS.appUuidMaxChars)
  if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'invalid_app_uuid', problem)
  const customerId = o.customer_id
  problem = charsProblem('customer_id', customerId, EVENT_LIMITS.customerIdMaxChars)
  if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'invalid_customer_id', problem)
  const eventName = o.event_name
  problem = charsProblem('event_name', eventName, EVENT_LIMITS.eventNameMaxChars)
  if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'invalid_event_name', problem)
  problem = uuidProblem('uuid', uuid)
  if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'invalid_uuid', problem)
  const eventTime = o.event_time
  problem = integerProblem('event_time', eventTime)
  if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'invalid_event_time', problem)
  problem = windowProblem('event_time', eventTime as number, ctx)
  if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'event_time_out_of_window', problem)
  let attributes: Record<string, string>
  if (o.attributes === undefined) attributes = {}
  else {
    const checked = takeAttributes(o.attributes)
    if (typeof checked === 'string') return rejected(line, rejectUuid(uuid), 'invalid_attributes', checked)
    attributes = checked
  }
  let ltvChange = o.ltv_change
  if (ltvChange === undefined) ltvChange = 0
  else {
    problem = integerProblem('ltv_change', ltvChange)
    if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'invalid_ltv_change', problem)
  }
  return {
    line,
    app_uuid: appUuid as string,
    customer_id: customerId as string,
    event_name: eventName as string,
    event_time: eventTime as number,
    uuid: canonicalEventUuid(uuid as string),
    attributes,
    // -0 would survive into storage as a distinct value in some encoders
    ltv_change: (ltvChange as number) + 0,
  }
}

// ---------------------------------------------------------------------------------------------
// Field checks, shared with the SDK row validator. Each returns undefined when the value is fine,
// else a short message for the sender; nothing is allocated on the happy path.

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

export function schemaUrlProblem(value: unknown): string | undefined {
  if (value === undefined) return 'schema_url is required'
  if (typeof value !== 'string') return `schema_url must be a string, not ${jsonType(value)}`
  if (!isEventSchemaUrl(value))
    return 'schema_url must be an absolute http(s) URL whose path ends in v0.json or v1.json'
  return undefined
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

function toLineResult(r: EventCheck): LineResult {
  return 'reason' in r ? { kind: 'reject', ...r } : { kind: 'ok', event: r }
}

// ---------------------------------------------------------------------------------------------
// Reference path: the same validation through the zod schema.

type EventField = keyof typeof eventLineSchema.shape

const FIELD_ORDER: Record<EventField, { rank: number; reason: RejectReason }> = {
  schema_url: { rank: 0, reason: 'invalid_schema_url' },
  app_uuid: { rank: 1, reason: 'invalid_app_uuid' },
  customer_id: { rank: 2, reason: 'invalid_customer_id' },
  event_name: { rank: 3, reason: 'invalid_event_name' },
  uuid: { rank: 4, reason: 'invalid_uuid' },
  event_time: { rank: 5, reason: 'invalid_event_time' },
  // rank 6: the event_time window, checked outside the schema
  attributes: { rank: 7, reason: 'invalid_attributes' },
  ltv_change: { rank: 8, reason: 'invalid_ltv_change' },
}
const WINDOW_RANK = 6

function issueDetail(issue: z.core.$ZodIssue): string {
  const nested = issue.code === 'invalid_key' ? issue.issues[0] : undefined
  const message = nested?.message ?? issue.message
  return issue.path.length <= 1 ? message : `${issue.path.map(String).join('.')}: ${message}`
}

/**
 * validateEventLine done with eventLineSchema. Slower; it exists so the fast path can be checked
 * against the schema that is published as JSON Schema. Reasons and events are identical to the
 * fast path's; details may be worded differently.
 */
export function validateEventLineBySchema(text: string, line: number, ctx: ValidateContext): LineResult {
  if (ctx.maxLineBytes !== undefined && utf8LongerThan(text, ctx.maxLineBytes))
    return toLineResult(tooLong(line, Buffer.byteLength(text, 'utf8'), ctx.maxLineBytes))
  let value: unknown
  try {
    value = parseJsonWellFormed(text)
  } catch (err) {
    return toLineResult(invalidJson(line, err))
  }
  if (!isJsonObject(value)) return toLineResult(notAnObject(line, value))
  const uuid = rejectUuid(value.uuid)
  const parsed = eventLineSchema.safeParse(value)
  let first: z.core.$ZodIssue | undefined
  let firstRank = Infinity
  let firstReason: RejectReason = 'not_an_object'
  for (const issue of parsed.error?.issues ?? []) {
    const field = FIELD_ORDER[issue.path[0] as EventField] as (typeof FIELD_ORDER)[EventField] | undefined
    const rank = field?.rank ?? -1
    if (rank < firstRank) {
      first = issue
      firstRank = rank
      firstReason = field?.reason ?? 'not_an_object'
    }
  }
  if (first && firstRank < WINDOW_RANK)
    return { kind: 'reject', line, uuid, reason: firstReason, detail: issueDetail(first) }
  const window = windowProblem('event_time', value.event_time as number, ctx)
  if (window !== undefined)
    return { kind: 'reject', line, uuid, reason: 'event_time_out_of_window', detail: window }
  if (first) return { kind: 'reject', line, uuid, reason: firstReason, detail: issueDetail(first) }
  if (!parsed.success) return toLineResult(notAnObject(line, value)) // unreachable: failures carry issues
  const d = parsed.data
  return {
    kind: 'ok',
    event: {
      line,
      app_uuid: d.app_uuid,
      customer_id: d.customer_id,
      event_name: d.event_name,
      event_time: d.event_time,
      uuid: d.uuid,
      attributes: d.attributes ?? {},
      ltv_change: d.ltv_change + 0,
    },
  }
}
