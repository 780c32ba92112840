import { EVENT_LIMITS, isEventSchemaUrl } from '../../schemas/events.ts'
import { parseJsonWellFormed } from '../text/unicode.ts'
import {
  charsProblem,
  integerProblem,
  invalidJson,
  isJsonObject,
  jsonType,
  notAnObject,
  rejectUuid,
  rejected,
  takeAttributes,
  tooLong,
  uuidProblem,
  validEventUuid,
  windowProblem,
  type RejectedLine,
} from './line-checks.ts'
import { utf8LongerThan } from './lines.ts'
import { validateLines, type LineScanner } from './validate-lines.ts'

/**
 * Pure validation of server-side event upload bodies (runs in piscina workers: synchronous, no
 * I/O, never throws for bad input).
 *
 * The hand-written checks here are the fast path; `validateEventLineBySchema`
 * (validate-event-by-schema.ts) is the same validation done with the zod schema in
 * schemas/events.ts, and a test compares the two over many generated lines. Change both together.
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
  | { kind: 'reject'; line: number; uuid: string | null; reason: EventRejectReason; detail: string }

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
export function validateEventBody(
  body: Buffer,
  ctx: ValidateContext,
  /** Takes each valid event as its line is checked; `events` is then left empty. */
  onEvent?: (event: ValidEvent) => void,
  /** Offered each line first (with `onEvent` only): the CPU pool's scanner, which packs what it takes. */
  scanner?: LineScanner,
): EventBodyResult {
  const { items, rejects, rejected, lines } = validateLines(
    body,
    (text, lineNumber) => checkEventText(text, lineNumber, ctx),
    (event) => event.uuid,
    ctx,
    (event) => event.app_uuid,
    onEvent,
    scanner,
  )
  return { events: items, rejects, rejected, lines }
}

type EventCheck = ValidEvent | RejectedLine<EventRejectReason>

export function toLineResult(r: EventCheck): LineResult {
  return 'reason' in r ? { kind: 'reject', ...r } : { kind: 'ok', event: r }
}

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
  const eventUuid = validEventUuid(uuid)
  if (eventUuid === undefined)
    return rejected(line, rejectUuid(uuid), 'invalid_uuid', uuidProblem('uuid', uuid)!)
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
    uuid: eventUuid,
    attributes,
    // -0 would survive into storage as a distinct value in some encoders
    ltv_change: (ltvChange as number) + 0,
  }
}

function schemaUrlProblem(value: unknown): string | undefined {
  if (value === undefined) return 'schema_url is required'
  if (typeof value !== 'string') return `schema_url must be a string, not ${jsonType(value)}`
  if (!isEventSchemaUrl(value))
    return 'schema_url must be an absolute http(s) URL whose path ends in v0.json or v1.json'
  return undefined
}
