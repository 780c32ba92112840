import { EVENT_LIMITS, charsAtMost } from '../../schemas/events.ts'
import { canonicalDeviceId } from '../../schemas/uuid.ts'
import { utf8LongerThan } from '../events/lines.ts'
import { cutCodePoints, parseJsonWellFormed } from '../text/unicode.ts'
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
  type TimeWindow,
} from '../events/line-checks.ts'
import { validateLines } from '../events/validate-lines.ts'

/**
 * Pure validation of SDK upload bodies: JSON lines of raw-log rows (session starts, events,
 * closes) named as in the spec's log export file. These rows build device state and are what the
 * hourly log export writes back out, so every log field is mapped to a column here; `at` and
 * `app` are not stored because the export derives them (from at_millis and the upload's app).
 *
 * Optional fields that are absent or null take the defaults '' / 0 / false / {}; unknown fields
 * are ignored.
 */

const HOUR_MS = 3_600_000

export const DEFAULT_SDK_PAST_WINDOW_MS = 30 * 24 * HOUR_MS
export const DEFAULT_SDK_FUTURE_WINDOW_MS = 48 * HOUR_MS
export const SDK_STRING_MAX_CHARS = 255
export const SDK_INSTALL_UUID_MAX_CHARS = 128

export const SDK_STRING_FIELDS = [
  'device_uuid',
  'session_uuid',
  'app_ver',
  'os_ver',
  'platform',
  'model',
  'country',
  'language',
  'device_timezone',
  'push_token',
  'push_status',
  'carrier',
  'browser',
  'bundle_id',
  'user_type',
  'library_ver',
  'advertising_id',
  'birth_date',
] as const
/** Finite numbers. */
export const SDK_NUMBER_FIELDS = ['lat', 'lng'] as const
/** Integers within ±(2^53 - 1). */
export const SDK_INTEGER_FIELDS = ['nth', 'sec_since_last_session'] as const
export const SDK_BOOLEAN_FIELDS = ['device_new', 'jailbroken', 'limit_advertising'] as const

type SdkStringField = (typeof SDK_STRING_FIELDS)[number]
type SdkNumberField = (typeof SDK_NUMBER_FIELDS)[number] | (typeof SDK_INTEGER_FIELDS)[number]
type SdkBooleanField = (typeof SDK_BOOLEAN_FIELDS)[number]
export type SdkOptionalField = SdkStringField | SdkNumberField | SdkBooleanField | 'customer_ids'

export type SdkRejectReason =
  | 'invalid_json'
  | 'not_an_object'
  | 'line_too_long'
  | 'duplicate_in_body'
  | 'invalid_type'
  | 'invalid_uuid'
  | 'invalid_install_uuid'
  | 'invalid_at_millis'
  | 'at_millis_out_of_window'
  | 'invalid_name'
  | 'invalid_attributes'
  | `invalid_${SdkOptionalField}`

export type SdkRowType = 's' | 'e' | 'c'

export type SdkRow = {
  line: number
  /** s: session start, e: event, c: close. */
  type: SdkRowType
  uuid: string
  install_uuid: string
  at_millis: number
  /** customer_ids.customer_id, '' when absent. */
  customer_id: string
  /** Event name for type e; '' otherwise. */
  name: string
  /** Event attributes for type e (numbers formatted as strings); {} otherwise. */
  attributes: Record<string, string>
} & Record<SdkStringField, string> &
  Record<SdkNumberField, number> &
  Record<SdkBooleanField, boolean>

export type SdkLineResult =
  | { kind: 'ok'; row: SdkRow }
  | { kind: 'reject'; line: number; uuid: string | null; reason: SdkRejectReason; detail: string }

export interface SdkValidateContext {
  receivedAt: number
  /** at_millis may be this far before receivedAt (inclusive); default 30 days. */
  pastWindowMs?: number
  /** at_millis may be this far after receivedAt (inclusive); default 48 hours. */
  futureWindowMs?: number
  /** Longer lines (UTF-8 bytes) are refused unparsed; no limit if absent. */
  maxLineBytes?: number
  /** Rejected lines kept with their reason (the first ones); the rest are only counted. */
  maxRejects?: number
}

export interface SdkBodyResult {
  rows: SdkRow[]
  /** The first `maxRejects` rejected lines, in line order. */
  rejects: RejectedLine<SdkRejectReason>[]
  /** Every rejected line, kept or not. */
  rejected: number
  /** Non-blank lines in the body. */
  lines: number
}

function windowOf(ctx: SdkValidateContext): TimeWindow {
  return {
    receivedAt: ctx.receivedAt,
    pastWindowMs: ctx.pastWindowMs ?? DEFAULT_SDK_PAST_WINDOW_MS,
    futureWindowMs: ctx.futureWindowMs ?? DEFAULT_SDK_FUTURE_WINDOW_MS,
  }
}

export function validateSdkLine(text: string, line: number, ctx: SdkValidateContext): SdkLineResult {
  const r =
    ctx.maxLineBytes !== undefined && utf8LongerThan(text, ctx.maxLineBytes)
      ? tooLong(line, Buffer.byteLength(text, 'utf8'), ctx.maxLineBytes)
      : checkSdkText(text, line, windowOf(ctx))
  return 'reason' in r ? { kind: 'reject', ...r } : { kind: 'ok', row: r }
}

/** Validates every line of an SDK upload body; a repeated uuid (after a valid row) is a duplicate. */
export function validateSdkBody(body: Buffer, ctx: SdkValidateContext): SdkBodyResult {
  const window = windowOf(ctx)
  const { items, rejects, rejected, lines } = validateLines(
    body,
    (text, lineNumber) => checkSdkText(text, lineNumber, window),
    (row) => row.uuid,
    ctx,
  )
  return { rows: items, rejects, rejected, lines }
}

function checkSdkText(
  text: string,
  line: number,
  window: TimeWindow,
): SdkRow | RejectedLine<SdkRejectReason> {
  let value: unknown
  try {
    value = parseJsonWellFormed(text)
  } catch (err) {
    return invalidJson(line, err)
  }
  return checkSdkValue(value, line, window)
}

function checkSdkValue(
  value: unknown,
  line: number,
  window: TimeWindow,
): SdkRow | RejectedLine<SdkRejectReason> {
  if (!isJsonObject(value)) return notAnObject(line, value)
  const o = value
  const uuid = o.uuid
  const type = o.type
  if (type !== 's' && type !== 'e' && type !== 'c')
    return rejected(line, rejectUuid(uuid), 'invalid_type', typeDetail(type))
  const eventUuid = validEventUuid(uuid)
  if (eventUuid === undefined)
    return rejected(line, rejectUuid(uuid), 'invalid_uuid', uuidProblem('uuid', uuid)!)
  let problem: string | undefined
  const installUuid = o.install_uuid
  problem = charsProblem('install_uuid', installUuid, SDK_INSTALL_UUID_MAX_CHARS)
  if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'invalid_install_uuid', problem)
  const atMillis = o.at_millis
  problem = integerProblem('at_millis', atMillis)
  if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'invalid_at_millis', problem)
  problem = windowProblem('at_millis', atMillis as number, window)
  if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'at_millis_out_of_window', problem)

  let name = ''
  let attributes: Record<string, string> = {}
  if (type === 'e') {
    problem = charsProblem('name', o.name, EVENT_LIMITS.eventNameMaxChars)
    if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'invalid_name', problem)
    name = o.name as string
    if (o.attributes !== undefined && o.attributes !== null) {
      const checked = takeAttributes(o.attributes)
      if (typeof checked === 'string') return rejected(line, rejectUuid(uuid), 'invalid_attributes', checked)
      attributes = checked
    }
  }

  let customerId = ''
  const ids = o.customer_ids
  if (ids !== undefined && ids !== null) {
    if (!isJsonObject(ids))
      return rejected(
        line,
        rejectUuid(uuid),
        'invalid_customer_ids',
        `customer_ids must be an object, not ${jsonType(ids)}`,
      )
    const id = ids.customer_id
    if (id !== undefined && id !== null) {
      problem = charsProblem('customer_ids.customer_id', id, EVENT_LIMITS.customerIdMaxChars)
      if (problem !== undefined) return rejected(line, rejectUuid(uuid), 'invalid_customer_ids', problem)
      customerId = id as string
    }
  }

  const row: SdkRow = {
    line,
    type,
    // One spelling per id, so a retry in another spelling is a duplicate and one device stays one.
    uuid: eventUuid,
    install_uuid: canonicalDeviceId(installUuid as string),
    at_millis: atMillis as number,
    customer_id: customerId,
    name,
    attributes,
    device_uuid: '',
    session_uuid: '',
    app_ver: '',
    os_ver: '',
    platform: '',
    model: '',
    country: '',
    language: '',
    device_timezone: '',
    push_token: '',
    push_status: '',
    carrier: '',
    browser: '',
    bundle_id: '',
    user_type: '',
    library_ver: '',
    advertising_id: '',
    birth_date: '',
    lat: 0,
    lng: 0,
    nth: 0,
    sec_since_last_session: 0,
    device_new: false,
    jailbroken: false,
    limit_advertising: false,
  }

  for (const field of SDK_STRING_FIELDS) {
    const v = o[field]
    if (v === undefined || v === null) continue
    if (typeof v !== 'string')
      return rejected(
        line,
        rejectUuid(uuid),
        `invalid_${field}`,
        `${field} must be a string, not ${jsonType(v)}`,
      )
    if (!charsAtMost(v, SDK_STRING_MAX_CHARS))
      return rejected(
        line,
        rejectUuid(uuid),
        `invalid_${field}`,
        `${field} is longer than ${SDK_STRING_MAX_CHARS} characters`,
      )
    row[field] = field === 'device_uuid' || field === 'session_uuid' ? canonicalDeviceId(v) : v
  }
  for (const field of SDK_NUMBER_FIELDS) {
    const v = o[field]
    if (v === undefined || v === null) continue
    // JSON.parse turns 1e999 into Infinity
    if (typeof v !== 'number')
      return rejected(
        line,
        rejectUuid(uuid),
        `invalid_${field}`,
        `${field} must be a number, not ${jsonType(v)}`,
      )
    if (!Number.isFinite(v))
      return rejected(line, rejectUuid(uuid), `invalid_${field}`, `${field} is out of range`)
    row[field] = v
  }
  for (const field of SDK_INTEGER_FIELDS) {
    const v = o[field]
    if (v === undefined || v === null) continue
    problem = integerProblem(field, v)
    if (problem !== undefined) return rejected(line, rejectUuid(uuid), `invalid_${field}`, problem)
    row[field] = (v as number) + 0
  }
  for (const field of SDK_BOOLEAN_FIELDS) {
    const v = o[field]
    if (v === undefined || v === null) continue
    if (typeof v !== 'boolean')
      return rejected(
        line,
        rejectUuid(uuid),
        `invalid_${field}`,
        `${field} must be true or false, not ${jsonType(v)}`,
      )
    row[field] = v
  }
  return row
}

function typeDetail(type: unknown): string {
  if (type === undefined) return 'type is required'
  if (typeof type === 'string') return `type must be "s", "e" or "c", not "${cutCodePoints(type, 20)}"`
  return `type must be "s", "e" or "c", not ${jsonType(type)}`
}
