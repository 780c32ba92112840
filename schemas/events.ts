import { z } from 'zod'
import { canonicalEventUuid } from './uuid.ts'

/**
 * Wire format of one server-side event request line (POST {events_url}/v0/uploads, JSON lines).
 *
 * This module is the single source of truth for the event line: the zod schema below, the JSON
 * Schema served at /schemas/events/v0.json, and the limits and predicates shared with the
 * hand-written fast path in pipelines/events/validate-event.ts (a test runs both over generated
 * lines and requires identical verdicts).
 *
 * Lengths count Unicode code points, not UTF-16 code units: that is what JSON Schema's
 * minLength/maxLength mean, so a sender validating against the published schema gets the same
 * answer as the server ("😀" is one character).
 */

export const EVENT_LIMITS = {
  appUuidMaxChars: 128,
  customerIdMaxChars: 128,
  eventNameMaxChars: 128,
  uuidMinChars: 32,
  uuidMaxChars: 75,
  maxAttributes: 50,
  attributeNameMaxChars: 128,
  attributeValueMaxChars: 128,
} as const

export const EVENT_SCHEMA_PATH = '/schemas/events/v0.json'
/** Versions a line's schema_url may name: v1 (the current API of the original service) has v0's fields. */
export const EVENT_SCHEMA_VERSIONS = ['v0', 'v1'] as const

export const UUID_PATTERN = /^[0-9a-fA-F-]{32,75}$/

/** Number of Unicode code points; a lone surrogate counts as one. */
export function charLength(s: string): number {
  let count = 0
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i)
    if (c >= 0xd800 && c <= 0xdbff && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1)
      if (d >= 0xdc00 && d <= 0xdfff) i++
    }
    count++
  }
  return count
}

/** Code points <= max, without counting in the common case (a code point is 1 or 2 code units). */
export function charsAtMost(s: string, max: number): boolean {
  if (s.length <= max) return true
  if (s.length > 2 * max) return false
  return charLength(s) <= max
}

// Bodies repeat the same schema_url on every line, so remembering the last good one makes the
// check a string comparison instead of a URL parse per line.
let lastGoodSchemaUrl = ''

/** An absolute http(s) URL whose path ends in `v0.json` or `v1.json` (query and fragment are ignored). */
export function isEventSchemaUrl(s: string): boolean {
  if (s === lastGoodSchemaUrl) return true
  // The WHATWG parser silently strips surrounding whitespace and control characters; a sender
  // that sends them has a bug worth reporting rather than papering over.
  if (s.length === 0 || s.charCodeAt(0) <= 0x20 || s.charCodeAt(s.length - 1) <= 0x20) return false
  let url: URL
  try {
    url = new URL(s)
  } catch {
    return false
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return false
  if (!url.pathname.endsWith('v0.json') && !url.pathname.endsWith('v1.json')) return false
  lastGoodSchemaUrl = s
  return true
}

function chars(field: string, min: number, max: number) {
  return z
    .string({ error: `${field} must be a string` })
    .min(min, { error: `${field} must not be empty` })
    .refine((s) => charsAtMost(s, max), { error: `${field} is longer than ${max} characters` })
    .meta({ minLength: min, maxLength: max })
}

const attributeName = z
  .string()
  .min(1, { error: 'attribute name must not be empty' })
  .refine((s) => charsAtMost(s, EVENT_LIMITS.attributeNameMaxChars), {
    error: `attribute name is longer than ${EVENT_LIMITS.attributeNameMaxChars} characters`,
  })
  .meta({ minLength: 1, maxLength: EVENT_LIMITS.attributeNameMaxChars })

const attributeValue = z.union(
  [
    z
      .string()
      .refine((s) => charsAtMost(s, EVENT_LIMITS.attributeValueMaxChars), {
        error: `value longer than ${EVENT_LIMITS.attributeValueMaxChars} characters`,
      })
      .meta({ maxLength: EVENT_LIMITS.attributeValueMaxChars }),
    // z.number() refuses NaN and ±Infinity (JSON.parse turns 1e999 into Infinity).
    z.number().refine((n) => charsAtMost(String(n), EVENT_LIMITS.attributeValueMaxChars), {
      error: `value longer than ${EVENT_LIMITS.attributeValueMaxChars} characters once formatted`,
    }),
  ],
  { error: 'value must be a string or a number' },
)

function countOwnKeys(o: object): number {
  let n = 0
  for (const _ in o) n++
  return n
}

const attributesRecord = z
  .record(attributeName, attributeValue, { error: 'attributes must be an object' })
  .meta({
    maxProperties: EVENT_LIMITS.maxAttributes,
    description:
      'Up to 50 user-defined attributes. Names and values are at most 128 characters; numeric values are stored as strings (String(n)).',
  })

export const eventAttributesSchema = z
  // These look at the object as sent: z.record neither validates nor copies a "__proto__" key,
  // so it could not count or refuse it. Downstream code building maps with obj[k] = v would
  // pollute a prototype with that name, so it is refused outright.
  .preprocess((value, ctx) => {
    if (typeof value !== 'object' || value === null || Array.isArray(value)) return value
    if (Object.hasOwn(value, '__proto__'))
      ctx.addIssue({ code: 'custom', input: value, message: 'attribute name "__proto__" is reserved' })
    else if (countOwnKeys(value) > EVENT_LIMITS.maxAttributes)
      ctx.addIssue({
        code: 'custom',
        input: value,
        message: `more than ${EVENT_LIMITS.maxAttributes} attributes`,
      })
    return value
  }, attributesRecord)
  .transform((o): Record<string, string> => {
    const out: Record<string, string> = {}
    for (const k in o) out[k] = String(o[k])
    return out
  })

/**
 * Fields are listed in check order: when a line breaks several rules, the first field here that
 * fails decides the reject reason (validate-event-by-schema.ts ranks issues the same way). The
 * event_time receive window is checked between event_time and attributes, outside the schema,
 * because it depends on when the upload arrived.
 */
export const eventLineSchema = z
  .object({
    schema_url: z
      .string({ error: 'schema_url must be a string' })
      .refine(isEventSchemaUrl, {
        error: 'schema_url must be an absolute http(s) URL whose path ends in v0.json or v1.json',
      })
      .meta({
        format: 'uri',
        pattern: '^[Hh][Tt][Tt][Pp][Ss]?://[^?#]*v[01]\\.json([?#].*)?$',
        description:
          'URL of the schema version of the request: an absolute http(s) URL ending in v0.json or v1.json (the same fields).',
        examples: [`https://events.example.com${EVENT_SCHEMA_PATH}`],
      }),
    app_uuid: chars('app_uuid', 1, EVENT_LIMITS.appUuidMaxChars).meta({ description: 'App ID' }),
    customer_id: chars('customer_id', 1, EVENT_LIMITS.customerIdMaxChars).meta({
      description: 'Customer ID of the end user who completed the event',
    }),
    event_name: chars('event_name', 1, EVENT_LIMITS.eventNameMaxChars).meta({
      description: 'Name of the event',
    }),
    uuid: z
      .string({ error: 'uuid must be a string' })
      .regex(UUID_PATTERN, {
        error: 'uuid must be 32 to 75 characters of 0-9, a-f, A-F and -',
      })
      .meta({
        minLength: EVENT_LIMITS.uuidMinChars,
        maxLength: EVENT_LIMITS.uuidMaxChars,
        description:
          'Randomly generated UUID; an event uuid is processed exactly once however it is spelled: a 128-bit UUID (32 hex digits, either case, dashes anywhere) is compared and stored as lower case 8-4-4-4-12, any other id in lower case.',
      })
      .transform(canonicalEventUuid),
    event_time: z
      .number({ error: 'event_time must be a number' })
      .int({ error: 'event_time must be an integer number of milliseconds' })
      .meta({
        description:
          'Milliseconds since epoch (UTC). At most 72 hours before and 48 hours after the time the upload is received.',
      }),
    attributes: eventAttributesSchema.optional(),
    ltv_change: z
      .number({ error: 'ltv_change must be a number' })
      .int({ error: 'ltv_change must be an integer (minor currency units: 2.99 is sent as 299)' })
      .default(0)
      .meta({
        description: "Change in the user's lifetime value, in minor currency units (2.99 is sent as 299).",
      }),
  })
  .meta({
    $id: EVENT_SCHEMA_PATH,
    title: 'Sluice server-side event (v0)',
    description:
      'One event request; an upload body holds one JSON object per line. Fields not listed here are ignored.',
  })

/** A line as the sender writes it. */
export type EventLineInput = z.input<typeof eventLineSchema>
/** A line after parsing: attributes formatted as strings, ltv_change defaulted to 0. */
export type EventLine = z.output<typeof eventLineSchema>

export type JsonSchema = Record<string, unknown>

const jsonSchemaCache = new Map<string, JsonSchema>()

/**
 * JSON Schema (draft 2020-12) of the input side of an event line. `id` is the `$id`; pass the
 * absolute address the schema is served at when it is known.
 */
export function eventJsonSchema(id: string = EVENT_SCHEMA_PATH): JsonSchema {
  let schema = jsonSchemaCache.get(id)
  if (!schema) {
    const generated = z.toJSONSchema(eventLineSchema, { io: 'input', target: 'draft-2020-12' })
    const { $schema, $id: _generatedId, title, description, ...rest } = generated
    // Identification first, for people reading the served document.
    schema = { $schema, $id: id, title, description, ...rest }
    jsonSchemaCache.set(id, schema)
  }
  return structuredClone(schema)
}
