import { describe, expect, it } from 'vitest'
import {
  validateEventBody,
  validateEventLine,
  type EventRejectReason,
  type LineResult,
  type ValidEvent,
} from '../../pipelines/events/validate-event.ts'
import { validateEventLineBySchema } from '../../pipelines/events/validate-event-by-schema.ts'
import { appOf, customerOf, EventPacker, packEvents } from '../../pipelines/events/event-row.ts'
import { keyHashes } from '../../pipelines/events/key-filter.ts'
import { ctx, EMOJI, HOUR, RECEIVED_AT, SCHEMA_URL, UUID } from '../helpers/event-line-fixtures.ts'

const base = {
  schema_url: SCHEMA_URL,
  app_uuid: 'app-1',
  customer_id: 'customer-1',
  event_name: 'Purchase Completed',
  event_time: RECEIVED_AT - HOUR,
  uuid: UUID,
}

/** A line from the base event with fields replaced; `undefined` removes a field. */
function ev(overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({ ...base, ...overrides })
}

function expectedEvent(line: number, overrides: Partial<ValidEvent> = {}): ValidEvent {
  const { schema_url: _schemaUrl, ...fields } = base
  return { line, ...fields, attributes: {}, ltv_change: 0, ...overrides }
}

const s = (n: number, ch = 'x') => ch.repeat(n)
const hexOf = (n: number) => s(n, 'a')
const canonical = (hex32: string) =>
  `${hex32.slice(0, 8)}-${hex32.slice(8, 12)}-${hex32.slice(12, 16)}-${hex32.slice(16, 20)}-${hex32.slice(20)}`
const attrs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, `v${i}`]))

interface Case {
  name: string
  line: string
  expect: 'ok' | EventRejectReason
  /** For ok lines: what differs from the base event. */
  event?: Partial<ValidEvent>
  /** For rejects: the uuid reported (default: the base uuid). */
  uuid?: string | null
}

const cases: Case[] = [
  { name: 'the base event', line: ev(), expect: 'ok' },
  { name: 'unknown extra fields are ignored', line: ev({ extra: { a: [1] }, source: 'x' }), expect: 'ok' },

  // schema_url
  { name: 'schema_url http', line: ev({ schema_url: 'http://h/v0.json' }), expect: 'ok' },
  { name: 'schema_url with a query', line: ev({ schema_url: 'https://h/s/v0.json?x=1' }), expect: 'ok' },
  {
    name: 'schema_url relative',
    line: ev({ schema_url: '/schemas/events/v0.json' }),
    expect: 'invalid_schema_url',
  },
  // v1.json is the current API of the original service: the same fields (issue 12)
  { name: 'schema_url of v1', line: ev({ schema_url: 'https://h/schemas/v1.json' }), expect: 'ok' },
  {
    name: 'schema_url of v2',
    line: ev({ schema_url: 'https://h/schemas/v2.json' }),
    expect: 'invalid_schema_url',
  },
  {
    name: 'schema_url not ending in v0.json',
    line: ev({ schema_url: 'https://h/v0.json/x' }),
    expect: 'invalid_schema_url',
  },
  { name: 'schema_url ftp', line: ev({ schema_url: 'ftp://h/v0.json' }), expect: 'invalid_schema_url' },
  {
    name: 'schema_url with a space',
    line: ev({ schema_url: ` ${SCHEMA_URL}` }),
    expect: 'invalid_schema_url',
  },
  { name: 'schema_url missing', line: ev({ schema_url: undefined }), expect: 'invalid_schema_url' },
  { name: 'schema_url a number', line: ev({ schema_url: 0 }), expect: 'invalid_schema_url' },

  // app_uuid
  { name: 'app_uuid 128', line: ev({ app_uuid: s(128) }), expect: 'ok', event: { app_uuid: s(128) } },
  { name: 'app_uuid 129', line: ev({ app_uuid: s(129) }), expect: 'invalid_app_uuid' },
  { name: 'app_uuid empty', line: ev({ app_uuid: '' }), expect: 'invalid_app_uuid' },
  { name: 'app_uuid missing', line: ev({ app_uuid: undefined }), expect: 'invalid_app_uuid' },
  { name: 'app_uuid a number', line: ev({ app_uuid: 7 }), expect: 'invalid_app_uuid' },

  // customer_id
  { name: 'customer_id 1', line: ev({ customer_id: 'c' }), expect: 'ok', event: { customer_id: 'c' } },
  {
    name: 'customer_id 128',
    line: ev({ customer_id: s(128) }),
    expect: 'ok',
    event: { customer_id: s(128) },
  },
  { name: 'customer_id 129', line: ev({ customer_id: s(129) }), expect: 'invalid_customer_id' },
  { name: 'customer_id empty', line: ev({ customer_id: '' }), expect: 'invalid_customer_id' },
  { name: 'customer_id missing', line: ev({ customer_id: undefined }), expect: 'invalid_customer_id' },
  { name: 'customer_id null', line: ev({ customer_id: null }), expect: 'invalid_customer_id' },
  { name: 'customer_id a number', line: ev({ customer_id: 42 }), expect: 'invalid_customer_id' },
  {
    name: 'customer_id of 128 emoji (code points)',
    line: ev({ customer_id: s(128, EMOJI) }),
    expect: 'ok',
    event: { customer_id: s(128, EMOJI) },
  },
  {
    name: 'customer_id of 129 emoji',
    line: ev({ customer_id: s(129, EMOJI) }),
    expect: 'invalid_customer_id',
  },

  // event_name
  { name: 'event_name 128', line: ev({ event_name: s(128) }), expect: 'ok', event: { event_name: s(128) } },
  { name: 'event_name 129', line: ev({ event_name: s(129) }), expect: 'invalid_event_name' },
  { name: 'event_name empty', line: ev({ event_name: '' }), expect: 'invalid_event_name' },
  { name: 'event_name missing', line: ev({ event_name: undefined }), expect: 'invalid_event_name' },

  // uuid
  { name: 'uuid 31', line: ev({ uuid: hexOf(31) }), expect: 'invalid_uuid', uuid: hexOf(31) },
  // 32 hex digits are a 128-bit UUID: stored in its canonical spelling (issue 18)
  { name: 'uuid 32', line: ev({ uuid: hexOf(32) }), expect: 'ok', event: { uuid: canonical(hexOf(32)) } },
  { name: 'uuid 75', line: ev({ uuid: hexOf(75) }), expect: 'ok', event: { uuid: hexOf(75) } },
  { name: 'uuid 76', line: ev({ uuid: hexOf(76) }), expect: 'invalid_uuid', uuid: hexOf(75) },
  {
    name: 'uuid upper case and dashes, stored in lower case',
    line: ev({ uuid: '6F1C2A9E-3B4D-4E5F-8A7B-9C0D1E2F3A4B' }),
    expect: 'ok',
    event: { uuid: '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4b' },
  },
  {
    name: 'uuid 40 hex digits in upper case, stored in lower case',
    line: ev({ uuid: s(40, 'A') }),
    expect: 'ok',
    event: { uuid: s(40, 'a') },
  },
  {
    name: 'uuid with a g',
    line: ev({ uuid: `${hexOf(35)}g` }),
    expect: 'invalid_uuid',
    uuid: `${hexOf(35)}g`,
  },
  { name: 'uuid with braces', line: ev({ uuid: `{${UUID}}` }), expect: 'invalid_uuid', uuid: `{${UUID}}` },
  { name: 'uuid missing', line: ev({ uuid: undefined }), expect: 'invalid_uuid', uuid: null },
  { name: 'uuid a number', line: ev({ uuid: 12345 }), expect: 'invalid_uuid', uuid: null },

  // event_time
  {
    name: 'event_time exactly 72 h before receipt',
    line: ev({ event_time: RECEIVED_AT - 72 * HOUR }),
    expect: 'ok',
    event: { event_time: RECEIVED_AT - 72 * HOUR },
  },
  {
    name: 'event_time 72 h and 1 ms before receipt',
    line: ev({ event_time: RECEIVED_AT - 72 * HOUR - 1 }),
    expect: 'event_time_out_of_window',
  },
  {
    name: 'event_time exactly 48 h after receipt',
    line: ev({ event_time: RECEIVED_AT + 48 * HOUR }),
    expect: 'ok',
    event: { event_time: RECEIVED_AT + 48 * HOUR },
  },
  {
    name: 'event_time 48 h and 1 ms after receipt',
    line: ev({ event_time: RECEIVED_AT + 48 * HOUR + 1 }),
    expect: 'event_time_out_of_window',
  },
  {
    name: 'event_time fractional',
    line: ev({ event_time: RECEIVED_AT + 0.5 }),
    expect: 'invalid_event_time',
  },
  {
    name: 'event_time a string',
    line: ev({ event_time: String(RECEIVED_AT) }),
    expect: 'invalid_event_time',
  },
  {
    name: 'event_time an ISO date',
    line: ev({ event_time: '2024-01-15T11:00:00Z' }),
    expect: 'invalid_event_time',
  },
  { name: 'event_time missing', line: ev({ event_time: undefined }), expect: 'invalid_event_time' },
  { name: 'event_time null', line: ev({ event_time: null }), expect: 'invalid_event_time' },
  {
    name: 'event_time written with an exponent is still an integer',
    line: ev().replace(String(base.event_time), '1.7053164e12'),
    expect: 'ok',
    event: { event_time: 1.7053164e12 },
  },

  // attributes
  { name: 'attributes empty', line: ev({ attributes: {} }), expect: 'ok' },
  {
    name: 'attributes 50',
    line: ev({ attributes: attrs(50) }),
    expect: 'ok',
    event: { attributes: attrs(50) },
  },
  { name: 'attributes 51', line: ev({ attributes: attrs(51) }), expect: 'invalid_attributes' },
  {
    name: 'attribute name 128',
    line: ev({ attributes: { [s(128, 'n')]: 'v' } }),
    expect: 'ok',
    event: { attributes: { [s(128, 'n')]: 'v' } },
  },
  {
    name: 'attribute name 129',
    line: ev({ attributes: { [s(129, 'n')]: 'v' } }),
    expect: 'invalid_attributes',
  },
  { name: 'attribute name empty', line: ev({ attributes: { '': 'v' } }), expect: 'invalid_attributes' },
  {
    name: 'attribute name __proto__',
    line: ev({ attributes: JSON.parse('{"__proto__": "v"}') as unknown }),
    expect: 'invalid_attributes',
  },
  {
    name: 'attribute value 128',
    line: ev({ attributes: { color: s(128) } }),
    expect: 'ok',
    event: { attributes: { color: s(128) } },
  },
  { name: 'attribute value 129', line: ev({ attributes: { color: s(129) } }), expect: 'invalid_attributes' },
  {
    name: 'attribute value empty string',
    line: ev({ attributes: { c: '' } }),
    expect: 'ok',
    event: { attributes: { c: '' } },
  },
  {
    name: 'numeric attributes become strings',
    line: ev({ attributes: { n: 42, f: 2.5, neg: -7, big: 1e21, tiny: 1e-7, s: 'text' } }),
    expect: 'ok',
    event: { attributes: { n: '42', f: '2.5', neg: '-7', big: '1e+21', tiny: '1e-7', s: 'text' } },
  },
  { name: 'attribute value true', line: ev({ attributes: { flag: true } }), expect: 'invalid_attributes' },
  { name: 'attribute value null', line: ev({ attributes: { x: null } }), expect: 'invalid_attributes' },
  { name: 'attribute value array', line: ev({ attributes: { x: ['a'] } }), expect: 'invalid_attributes' },
  { name: 'attribute value object', line: ev({ attributes: { x: { y: 1 } } }), expect: 'invalid_attributes' },
  {
    name: 'attribute value 1e999 (Infinity)',
    line: ev({ attributes: { x: 0 } }).replace('"x":0', '"x":1e999'),
    expect: 'invalid_attributes',
  },
  { name: 'attributes an array', line: ev({ attributes: ['a'] }), expect: 'invalid_attributes' },
  { name: 'attributes null', line: ev({ attributes: null }), expect: 'invalid_attributes' },
  { name: 'attributes a string', line: ev({ attributes: 'a=b' }), expect: 'invalid_attributes' },

  // ltv_change
  { name: 'ltv_change 299', line: ev({ ltv_change: 299 }), expect: 'ok', event: { ltv_change: 299 } },
  { name: 'ltv_change -299', line: ev({ ltv_change: -299 }), expect: 'ok', event: { ltv_change: -299 } },
  {
    name: 'ltv_change MAX_SAFE_INTEGER',
    line: ev({ ltv_change: Number.MAX_SAFE_INTEGER }),
    expect: 'ok',
    event: { ltv_change: Number.MAX_SAFE_INTEGER },
  },
  {
    name: 'ltv_change -MAX_SAFE_INTEGER',
    line: ev({ ltv_change: -Number.MAX_SAFE_INTEGER }),
    expect: 'ok',
    event: { ltv_change: -Number.MAX_SAFE_INTEGER },
  },
  { name: 'ltv_change 2^53', line: ev({ ltv_change: 2 ** 53 }), expect: 'invalid_ltv_change' },
  { name: 'ltv_change 2.99', line: ev({ ltv_change: 2.99 }), expect: 'invalid_ltv_change' },
  { name: 'ltv_change "299"', line: ev({ ltv_change: '299' }), expect: 'invalid_ltv_change' },
  { name: 'ltv_change null', line: ev({ ltv_change: null }), expect: 'invalid_ltv_change' },

  // the first failing rule decides
  {
    name: 'bad customer_id and bad uuid',
    line: ev({ customer_id: '', uuid: 'x' }),
    expect: 'invalid_customer_id',
    uuid: 'x',
  },
  {
    name: 'bad schema_url and everything else',
    line: '{"schema_url":"v0.json","x":1}',
    expect: 'invalid_schema_url',
    uuid: null,
  },
  {
    name: 'bad app_uuid and bad event_name',
    line: ev({ app_uuid: 1, event_name: '' }),
    expect: 'invalid_app_uuid',
  },
  {
    name: 'bad event_name and bad uuid',
    line: ev({ event_name: 1, uuid: 1 }),
    expect: 'invalid_event_name',
    uuid: null,
  },
  {
    name: 'bad uuid and bad event_time',
    line: ev({ uuid: 'zz', event_time: 'x' }),
    expect: 'invalid_uuid',
    uuid: 'zz',
  },
  {
    name: 'fractional event_time and bad attributes',
    line: ev({ event_time: 1.5, attributes: [] }),
    expect: 'invalid_event_time',
  },
  {
    name: 'event_time out of window and bad attributes',
    line: ev({ event_time: 0, attributes: { a: true } }),
    expect: 'event_time_out_of_window',
  },
  {
    name: 'bad attributes and bad ltv_change',
    line: ev({ attributes: { a: true }, ltv_change: 'x' }),
    expect: 'invalid_attributes',
  },

  // not an event object at all
  { name: 'invalid JSON', line: '{"uuid": "abc",', expect: 'invalid_json', uuid: null },
  { name: 'single quotes', line: "{'a': 1}", expect: 'invalid_json', uuid: null },
  { name: 'two objects on one line', line: `${ev()} ${ev()}`, expect: 'invalid_json', uuid: null },
  { name: 'an array', line: `[${ev()}]`, expect: 'not_an_object', uuid: null },
  { name: 'a string', line: '"event"', expect: 'not_an_object', uuid: null },
  { name: 'a number', line: '42', expect: 'not_an_object', uuid: null },
  { name: 'null', line: 'null', expect: 'not_an_object', uuid: null },
]

const implementations = [
  ['fast path', validateEventLine],
  ['schema path', validateEventLineBySchema],
] as const

describe.each(implementations)('validateEventLine (%s)', (_name, validate) => {
  it.each(cases)('$name → $expect', (c) => {
    const result = validate(c.line, 7, ctx)
    if (c.expect === 'ok') {
      expect(result).toEqual({ kind: 'ok', event: expectedEvent(7, c.event) })
    } else {
      expect(result).toMatchObject({
        kind: 'reject',
        line: 7,
        reason: c.expect,
        uuid: c.uuid === undefined ? UUID : c.uuid,
      })
      expect(result.kind === 'reject' && result.detail.length).toBeGreaterThan(0)
    }
  })

  it('refuses lines over maxLineBytes, counting UTF-8 bytes', () => {
    const line = ev({ pad: '' })
    const limit = Buffer.byteLength(line) + 2
    const at = (pad: string) => validate(ev({ pad }), 1, { ...ctx, maxLineBytes: limit })
    expect(at('aa').kind).toBe('ok')
    expect(at('é').kind).toBe('ok') // 2 bytes
    expect(at('aaa')).toMatchObject({ kind: 'reject', reason: 'line_too_long', uuid: null })
    expect(at('€')).toMatchObject({ kind: 'reject', reason: 'line_too_long' }) // 3 bytes, 1 character
  })

  it('honours configured windows', () => {
    const narrow = { ...ctx, pastWindowMs: HOUR, futureWindowMs: 0 }
    expect(validate(ev({ event_time: RECEIVED_AT - HOUR }), 1, narrow).kind).toBe('ok')
    expect(validate(ev({ event_time: RECEIVED_AT - HOUR - 1 }), 1, narrow)).toMatchObject({
      reason: 'event_time_out_of_window',
    })
    expect(validate(ev({ event_time: RECEIVED_AT }), 1, narrow).kind).toBe('ok')
    expect(validate(ev({ event_time: RECEIVED_AT + 1 }), 1, narrow)).toMatchObject({
      reason: 'event_time_out_of_window',
    })
  })
})

describe('validateEventLine details', () => {
  const detail = (line: string) => {
    const r = validateEventLine(line, 1, ctx)
    return r.kind === 'reject' ? r.detail : 'ok'
  }

  it('explains each refusal in a short sentence', () => {
    expect(detail(ev({ event_time: RECEIVED_AT - 80 * HOUR }))).toBe(
      'event_time is 80 hours in the past; the limit is 72 hours',
    )
    expect(detail(ev({ event_time: RECEIVED_AT - 72 * HOUR - 1 }))).toBe(
      'event_time is 72 hours in the past; the limit is 72 hours (1 ms over)',
    )
    expect(detail(ev({ event_time: RECEIVED_AT + 50 * HOUR }))).toBe(
      'event_time is 50 hours in the future; the limit is 48 hours',
    )
    expect(detail(ev({ attributes: { color: s(129) } }))).toBe(
      'attributes.color: value longer than 128 characters',
    )
    expect(detail(ev({ attributes: { flag: false } }))).toBe(
      'attributes.flag: value must be a string or a number, not a boolean',
    )
    expect(detail(ev({ attributes: attrs(51) }))).toBe('attributes: more than 50 attributes')
    expect(detail(ev({ customer_id: s(129) }))).toBe('customer_id is longer than 128 characters (129)')
    expect(detail(ev({ customer_id: undefined }))).toBe('customer_id is required')
    expect(detail(ev({ uuid: hexOf(31) }))).toBe('uuid must be 32 to 75 characters, not 31')
    expect(detail(ev({ uuid: `${hexOf(31)}z` }))).toBe('uuid may only contain 0-9, a-f, A-F and -')
    expect(detail(ev({ ltv_change: 2.99 }))).toBe('ltv_change must be an integer, not 2.99')
    expect(detail(ev({ ltv_change: '299' }))).toBe('ltv_change must be an integer number, not a string')
    expect(detail('[1]')).toBe('line is an array, not a JSON object')
  })

  it('cuts a long uuid to 75 characters in the reject', () => {
    const r = validateEventLine(ev({ uuid: s(200, 'u') }), 1, ctx)
    expect(r).toMatchObject({ reason: 'invalid_uuid', uuid: s(75, 'u') })
    const pairs = validateEventLine(ev({ uuid: s(50, EMOJI) }), 1, ctx)
    // 75 code units would split the 38th emoji; the half is dropped
    expect(pairs).toMatchObject({ reason: 'invalid_uuid', uuid: s(37, EMOJI) })
  })
})

function body(lines: string[], eol = '\n'): Buffer {
  return Buffer.from(lines.join(eol), 'utf8')
}

describe('validateEventBody', () => {
  it('numbers lines over the body, skips blank lines and tolerates CRLF', () => {
    const U2 = '11111111-2222-3333-4444-555555555555'
    const U3 = '33333333-2222-3333-4444-555555555555'
    const result = validateEventBody(
      body(
        [
          ev(), // 1
          '', // 2
          '   \t', // 3
          ev({ uuid: U2, attributes: { n: 1 } }), // 4
          '{"broken": ', // 5
          ev({ uuid: U3, customer_id: '' }), // 6
          ev(), // 7: same app and uuid as line 1
          ev({ app_uuid: 'app-2' }), // 8: same uuid, other app
          ev({ uuid: U3 }), // 9: line 6 was refused, so its uuid is still free
          '', // trailing newline
        ],
        '\r\n',
      ),
      ctx,
    )
    expect(result.lines).toBe(7)
    expect(result.events).toEqual([
      expectedEvent(1),
      expectedEvent(4, { uuid: U2, attributes: { n: '1' } }),
      expectedEvent(8, { app_uuid: 'app-2' }),
      expectedEvent(9, { uuid: U3 }),
    ])
    expect(result.rejects.map(({ line, uuid, reason }) => ({ line, uuid, reason }))).toEqual([
      { line: 5, uuid: null, reason: 'invalid_json' },
      { line: 6, uuid: U3, reason: 'invalid_customer_id' },
      { line: 7, uuid: UUID, reason: 'duplicate_in_body' },
    ])
    expect(result.rejects[2]?.detail).toBe('uuid already used on line 1')
  })

  it('treats one uuid in several spellings as one uuid (issue 18)', () => {
    const bare = UUID.replaceAll('-', '')
    const result = validateEventBody(
      body([ev(), ev({ uuid: UUID.toUpperCase() }), ev({ uuid: bare }), ev({ uuid: bare.toUpperCase() })]),
      ctx,
    )
    expect(result.events.map((e) => e.uuid)).toEqual([UUID])
    expect(result.rejects.map((r) => [r.line, r.reason, r.detail])).toEqual([
      [2, 'duplicate_in_body', 'uuid already used on line 1'],
      [3, 'duplicate_in_body', 'uuid already used on line 1'],
      [4, 'duplicate_in_body', 'uuid already used on line 1'],
    ])
  })

  it('accepts a body without a trailing newline, with a BOM, or empty', () => {
    expect(validateEventBody(Buffer.from(`\uFEFF${ev()}`), ctx)).toEqual({
      events: [expectedEvent(1)],
      rejects: [],
      rejected: 0,
      lines: 1,
    })
    expect(validateEventBody(Buffer.alloc(0), ctx)).toEqual({
      events: [],
      rejects: [],
      rejected: 0,
      lines: 0,
    })
    expect(validateEventBody(Buffer.from('\n\r\n  \n'), ctx)).toEqual({
      events: [],
      rejects: [],
      rejected: 0,
      lines: 0,
    })
  })

  it('refuses a line of invalid UTF-8 and keeps the others', () => {
    const bad = Buffer.concat([Buffer.from('{"uuid":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')])
    const result = validateEventBody(
      Buffer.concat([Buffer.from(`${ev()}\n`), bad, Buffer.from(`\n${ev({ uuid: hexOf(40) })}`)]),
      ctx,
    )
    expect(result.events.map((e) => e.line)).toEqual([1, 3])
    expect(result.rejects).toEqual([
      { line: 2, uuid: null, reason: 'invalid_json', detail: 'line is not valid UTF-8' },
    ])
    expect(result.lines).toBe(3)
  })

  it('refuses lines over maxLineBytes without parsing them', () => {
    const long = ev({ pad: s(500) })
    const result = validateEventBody(body([ev(), long, ev({ uuid: hexOf(40) })]), {
      ...ctx,
      maxLineBytes: 400,
    })
    expect(result.events.map((e) => e.line)).toEqual([1, 3])
    expect(result.rejects).toEqual([
      {
        line: 2,
        uuid: null,
        reason: 'line_too_long',
        detail: `line is ${Buffer.byteLength(long)} bytes; the limit is 400`,
      },
    ])
  })

  it('does not count the CR of a CRLF towards maxLineBytes', () => {
    const line = ev()
    const result = validateEventBody(body([line, line.replace(UUID, UUID.replace('6f1c', '7f1c'))], '\r\n'), {
      ...ctx,
      maxLineBytes: Buffer.byteLength(line),
    })
    expect(result.events).toHaveLength(2)
  })

  it('past maxRejects counts every bad line, keeps the first reasons, and still takes valid lines', () => {
    const second = UUID.replace('6f1c', '7f1c')
    const third = UUID.replace('6f1c', '8f1c')
    const lines = [
      'x', // invalid_json, kept
      '[1]', // not_an_object, kept
      '5', // past the limit: counted unparsed
      'nope',
      ' \t"a string"',
      ev({ uuid: second }), // valid, past the limit
      '{"broken": ', // starts as an object: parsed, rejected, counted
      ev({ event_name: '' }), // an object with a bad field: counted
      `  ${ev({ uuid: third })}`, // valid, with leading spaces
      ev({ uuid: second }), // duplicate_in_body: counted
    ]
    const result = validateEventBody(body(lines), { ...ctx, maxRejects: 2 })
    expect(result.events.map((e) => [e.line, e.uuid])).toEqual([
      [6, second],
      [9, third],
    ])
    expect(result.rejected).toBe(8)
    expect(result.lines).toBe(10)
    expect(result.rejects).toEqual([
      { line: 1, uuid: null, reason: 'invalid_json', detail: expect.stringContaining('not valid JSON') },
      { line: 2, uuid: null, reason: 'not_an_object', detail: expect.any(String) },
    ])
  })
})

describe('validateEventBody with onEvent (the CPU pool packs each event as it is checked)', () => {
  it('hands over the same events, in line order, as the list it returns without it', () => {
    const U2 = '11111111-2222-3333-4444-555555555555'
    const lines = [
      ev(),
      '{"broken": ',
      ev({ uuid: U2, attributes: { n: 1, s: 'é' } }),
      ev(), // duplicate_in_body
      ev({ app_uuid: 'app-2', ltv_change: -5 }),
      ev({ customer_id: '' }),
    ]
    const listed = validateEventBody(body(lines), ctx)
    const handed: ValidEvent[] = []
    const streamed = validateEventBody(body(lines), ctx, (event) => handed.push(event))
    expect(handed.map((e) => e.line)).toEqual([1, 3, 5])
    expect(handed).toEqual(listed.events)
    expect(streamed.events).toEqual([])
    expect({ ...streamed, events: undefined }).toEqual({ ...listed, events: undefined })
    // And packed one by one, they are the bytes packEvents writes for the list.
    const packer = new EventPacker(1)
    for (const e of handed) packer.add(e)
    const packed = packer.packed()
    const whole = packEvents(listed.events)
    expect(Buffer.from(packed.own)).toEqual(Buffer.from(whole.own))
    expect([...packed.ownEnd]).toEqual([...whole.ownEnd])
    expect([...packed.keyHash]).toEqual([...whole.keyHash])
    expect([[...packed.line], packed.uuid]).toEqual([
      [1, 3, 5],
      [UUID, U2, UUID],
    ])
    // Each distinct app and customer once, and each event's index into them.
    expect([packed.apps, [...packed.appIndex], packed.customers, [...packed.customerIndex]]).toEqual([
      ['app-1', 'app-2'],
      [0, 0, 1],
      ['customer-1'],
      [0, 0, 0],
    ])
    // The key hashes through the indexes are those of each event's own app and uuid.
    expect([...packed.keyHash]).toEqual([...keyHashes(['app-1', 'app-1', 'app-2'], [UUID, U2, UUID])])
    expect(packed.uuid.map((_, i) => [appOf(packed, i), customerOf(packed, i)])).toEqual([
      ['app-1', 'customer-1'],
      ['app-1', 'customer-1'],
      ['app-2', 'customer-1'],
    ])
  })
})

// ---------------------------------------------------------------------------------------------
// The fast path against the zod schema, over generated lines.

function mulberry32(seed: number): () => number {
  let a = seed
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const INF = '__INFINITY__'
const NEG_ZERO = '__NEGATIVE_ZERO__'

function generator(seed: number) {
  const random = mulberry32(seed)
  const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T
  const chance = (p: number) => random() < p
  const text = (n: number) => {
    const alphabet = ['a', 'Z', '0', ' ', 'é', EMOJI, '"', '\\', '\n', '\u0000', 'ß']
    let out = ''
    for (let i = 0; i < n; i++) out += pick(alphabet)
    return out
  }
  const lengthAround = (max: number) => pick([0, 1, 2, max - 1, max, max + 1, Math.floor(max / 2), 2 * max])
  const wrongType = () => pick<unknown>([null, true, false, 0, 1.5, -1, [], ['a'], {}, { a: 1 }, INF])
  const str = (max: number) =>
    chance(0.85) ? (chance(0.6) ? text(1 + Math.floor(random() * 20)) : text(lengthAround(max))) : wrongType()
  const hex = (n: number) => {
    let out = ''
    for (let i = 0; i < n; i++) out += pick([...'0123456789abcdefABCDEF-'])
    return out
  }
  const uuid = () =>
    chance(0.8)
      ? hex(pick([32, 36, 40, 75]))
      : pick<unknown>([
          hex(31),
          hex(76),
          hex(33) + pick(['g', ' ', '_', EMOJI, 'é']),
          hex(10),
          '',
          s(75, EMOJI),
          wrongType(),
        ])
  const eventTime = () =>
    chance(0.75)
      ? RECEIVED_AT - 72 * HOUR + Math.floor(random() * 120 * HOUR)
      : pick<unknown>([
          RECEIVED_AT - 72 * HOUR,
          RECEIVED_AT - 72 * HOUR - 1,
          RECEIVED_AT + 48 * HOUR,
          RECEIVED_AT + 48 * HOUR + 1,
          RECEIVED_AT + 0.5,
          String(RECEIVED_AT),
          2 ** 53,
          -(2 ** 53),
          0,
          1e300,
          NEG_ZERO,
          wrongType(),
        ])
  const attributeName = () =>
    chance(0.8)
      ? `attr_${Math.floor(random() * 1000)}`
      : pick(['', '__proto__', 'constructor', 'toString', text(128), text(129), s(64, EMOJI), s(65, EMOJI)])
  const attributeValue = () =>
    chance(0.7)
      ? chance(0.5)
        ? text(Math.floor(random() * 12))
        : pick([0, 42, 2.5, -7, 1e21, 1e-7, Number.MAX_VALUE, NEG_ZERO])
      : pick<unknown>([text(128), text(129), s(128, EMOJI), s(129, EMOJI), true, null, [], {}, INF])
  const attributes = () => {
    if (chance(0.3)) return undefined
    if (chance(0.08)) return wrongType()
    const n = chance(0.85) ? Math.floor(random() * 8) : pick([49, 50, 51, 60])
    const out: Record<string, unknown> = {}
    for (let i = 0; i < n; i++) {
      const name = attributeName()
      Object.defineProperty(out, name, { value: attributeValue(), enumerable: true, writable: true })
    }
    return out
  }
  const ltv = () =>
    chance(0.5)
      ? undefined
      : pick<unknown>([
          0,
          299,
          -299,
          Number.MAX_SAFE_INTEGER,
          -Number.MAX_SAFE_INTEGER,
          2 ** 53,
          2.99,
          '299',
          NEG_ZERO,
          wrongType(),
        ])
  const schemaUrl = () =>
    chance(0.85)
      ? SCHEMA_URL
      : pick<unknown>([
          'http://x/v0.json',
          'https://x/a/v0.json?q#f',
          '/schemas/events/v0.json',
          'https://x/v1.json',
          'ftp://x/v0.json',
          'https:/x/v0.json',
          ' https://x/v0.json',
          'v0.json',
          'https://x/v0.JSON',
          wrongType(),
        ])

  return (): string => {
    const roll = random()
    if (roll < 0.01) return pick(['{', '[]', '"x"', '12', 'null', '{"a":1}{', 'tru'])
    const event: Record<string, unknown> = {}
    const fields: [string, () => unknown][] = [
      ['schema_url', schemaUrl],
      ['app_uuid', () => (chance(0.9) ? 'app-1' : str(128))],
      ['customer_id', () => str(128)],
      ['event_name', () => str(128)],
      ['uuid', uuid],
      ['event_time', eventTime],
      ['attributes', attributes],
      ['ltv_change', ltv],
    ]
    for (const [name, make] of fields) {
      if (chance(0.02)) continue // missing
      const value = make()
      if (value !== undefined) event[name] = value
    }
    if (chance(0.1)) event.unknown_field = pick<unknown>(['x', 1, null, { deep: [1] }, s(3000)])
    return JSON.stringify(event).replaceAll(`"${INF}"`, '1e999').replaceAll(`"${NEG_ZERO}"`, '-0')
  }
}

describe('fast path agrees with the zod schema', () => {
  it('over 20,000 generated lines', () => {
    const next = generator(20240115)
    const limited = { ...ctx, maxLineBytes: 4096 }
    const seen = new Map<string, number>()
    const mismatches: { line: string; fast: LineResult; schema: LineResult }[] = []
    for (let i = 1; i <= 20_000; i++) {
      const line = next()
      const fast = validateEventLine(line, i, limited)
      const schema = validateEventLineBySchema(line, i, limited)
      const key = fast.kind === 'ok' ? 'ok' : fast.reason
      seen.set(key, (seen.get(key) ?? 0) + 1)
      const same =
        fast.kind === 'ok'
          ? schema.kind === 'ok' && JSON.stringify(fast.event) === JSON.stringify(schema.event)
          : schema.kind === 'reject' &&
            fast.reason === schema.reason &&
            fast.uuid === schema.uuid &&
            fast.line === schema.line
      if (!same) mismatches.push({ line, fast, schema })
    }
    expect(mismatches.slice(0, 3)).toEqual([])
    // the generator must reach every outcome decided per line, or the comparison proves little
    const reached = [...seen.keys()].sort()
    expect(reached).toEqual(
      [
        'ok',
        'invalid_json',
        'not_an_object',
        'invalid_schema_url',
        'invalid_app_uuid',
        'invalid_customer_id',
        'invalid_event_name',
        'invalid_event_time',
        'event_time_out_of_window',
        'invalid_uuid',
        'invalid_attributes',
        'invalid_ltv_change',
        'line_too_long',
      ].sort(),
    )
    expect(seen.get('ok')).toBeGreaterThan(1000)
  })
})
