import { describe, expect, it } from 'vitest'
import {
  SDK_BOOLEAN_FIELDS,
  SDK_INTEGER_FIELDS,
  SDK_NUMBER_FIELDS,
  SDK_STRING_FIELDS,
  validateSdkBody,
  validateSdkLine,
  type SdkRejectReason,
  type SdkRow,
  type SdkValidateContext,
} from '../../pipelines/sdk/validate-sdk-row.ts'

const HOUR = 3_600_000
const DAY = 24 * HOUR
const RECEIVED_AT = Date.UTC(2024, 0, 15, 12, 0, 0)
const ctx: SdkValidateContext = { receivedAt: RECEIVED_AT }
const UUID = '0f8fad5b-d9cb-469f-a165-70867728950e'
const INSTALL = 'install-7d3e'

const base = { type: 's', uuid: UUID, install_uuid: INSTALL, at_millis: RECEIVED_AT - HOUR }

function row(overrides: Record<string, unknown> = {}): string {
  return JSON.stringify({ ...base, ...overrides })
}

const DEFAULTS: Omit<SdkRow, 'line' | 'type' | 'uuid' | 'install_uuid' | 'at_millis'> = {
  customer_id: '',
  name: '',
  attributes: {},
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

function expectedRow(line: number, overrides: Partial<SdkRow> = {}): SdkRow {
  return {
    line,
    type: 's',
    uuid: UUID,
    install_uuid: INSTALL,
    at_millis: base.at_millis,
    ...DEFAULTS,
    ...overrides,
  }
}

const s = (n: number, ch = 'x') => ch.repeat(n)
const hexOf = (n: number) => s(n, 'b')
const attrs = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`a${i}`, i]))

interface Case {
  name: string
  line: string
  expect: 'ok' | SdkRejectReason
  row?: Partial<SdkRow>
  uuid?: string | null
}

const cases: Case[] = [
  { name: 'a session start', line: row(), expect: 'ok' },
  { name: 'a close', line: row({ type: 'c' }), expect: 'ok', row: { type: 'c' } },
  {
    name: 'an event',
    line: row({ type: 'e', name: 'Viewed', attributes: { a: 'x', n: 2.5 } }),
    expect: 'ok',
    row: { type: 'e', name: 'Viewed', attributes: { a: 'x', n: '2.5' } },
  },
  {
    name: 'unknown fields are ignored',
    line: row({ whatever: [1], at: '2024-01-15 11:00:00', app: 'x' }),
    expect: 'ok',
  },
  {
    name: 'null optional fields take defaults',
    line: row({ device_uuid: null, lat: null, jailbroken: null, customer_ids: null }),
    expect: 'ok',
  },

  // type
  { name: 'type missing', line: row({ type: undefined }), expect: 'invalid_type' },
  { name: 'type upper case', line: row({ type: 'S' }), expect: 'invalid_type' },
  { name: 'type x', line: row({ type: 'x' }), expect: 'invalid_type' },
  { name: 'type a number', line: row({ type: 1 }), expect: 'invalid_type' },

  // uuid
  { name: 'uuid 31', line: row({ uuid: hexOf(31) }), expect: 'invalid_uuid', uuid: hexOf(31) },
  // 32 hex digits are a 128-bit UUID: stored in its canonical spelling (issue 18)
  {
    name: 'uuid 32',
    line: row({ uuid: hexOf(32) }),
    expect: 'ok',
    row: { uuid: `${s(8, 'b')}-${s(4, 'b')}-${s(4, 'b')}-${s(4, 'b')}-${s(12, 'b')}` },
  },
  { name: 'uuid 75', line: row({ uuid: hexOf(75) }), expect: 'ok', row: { uuid: hexOf(75) } },
  { name: 'uuid 76', line: row({ uuid: hexOf(76) }), expect: 'invalid_uuid', uuid: hexOf(75) },
  {
    name: 'uuid with an x',
    line: row({ uuid: `${hexOf(35)}x` }),
    expect: 'invalid_uuid',
    uuid: `${hexOf(35)}x`,
  },
  { name: 'uuid missing', line: row({ uuid: undefined }), expect: 'invalid_uuid', uuid: null },

  // install_uuid
  {
    name: 'install_uuid 128',
    line: row({ install_uuid: s(128) }),
    expect: 'ok',
    row: { install_uuid: s(128) },
  },
  { name: 'install_uuid 129', line: row({ install_uuid: s(129) }), expect: 'invalid_install_uuid' },
  { name: 'install_uuid empty', line: row({ install_uuid: '' }), expect: 'invalid_install_uuid' },
  { name: 'install_uuid missing', line: row({ install_uuid: undefined }), expect: 'invalid_install_uuid' },

  // at_millis
  {
    name: 'at_millis exactly 48 h ahead',
    line: row({ at_millis: RECEIVED_AT + 48 * HOUR }),
    expect: 'ok',
    row: { at_millis: RECEIVED_AT + 48 * HOUR },
  },
  {
    name: 'at_millis 48 h and 1 ms ahead',
    line: row({ at_millis: RECEIVED_AT + 48 * HOUR + 1 }),
    expect: 'at_millis_out_of_window',
  },
  {
    name: 'at_millis exactly 30 days back',
    line: row({ at_millis: RECEIVED_AT - 30 * DAY }),
    expect: 'ok',
    row: { at_millis: RECEIVED_AT - 30 * DAY },
  },
  {
    name: 'at_millis 30 days and 1 ms back',
    line: row({ at_millis: RECEIVED_AT - 30 * DAY - 1 }),
    expect: 'at_millis_out_of_window',
  },
  { name: 'at_millis fractional', line: row({ at_millis: RECEIVED_AT - 0.5 }), expect: 'invalid_at_millis' },
  { name: 'at_millis a string', line: row({ at_millis: String(RECEIVED_AT) }), expect: 'invalid_at_millis' },
  { name: 'at_millis missing', line: row({ at_millis: undefined }), expect: 'invalid_at_millis' },

  // name and attributes (events only)
  {
    name: 'event name 128',
    line: row({ type: 'e', name: s(128) }),
    expect: 'ok',
    row: { type: 'e', name: s(128) },
  },
  { name: 'event name 129', line: row({ type: 'e', name: s(129) }), expect: 'invalid_name' },
  { name: 'event name empty', line: row({ type: 'e', name: '' }), expect: 'invalid_name' },
  { name: 'event name missing', line: row({ type: 'e' }), expect: 'invalid_name' },
  { name: 'session name is ignored', line: row({ name: 42, attributes: 'junk' }), expect: 'ok' },
  {
    name: 'event attributes 50',
    line: row({ type: 'e', name: 'n', attributes: attrs(50) }),
    expect: 'ok',
    row: {
      type: 'e',
      name: 'n',
      attributes: Object.fromEntries(Object.entries(attrs(50)).map(([k, v]) => [k, String(v)])),
    },
  },
  {
    name: 'event attributes 51',
    line: row({ type: 'e', name: 'n', attributes: attrs(51) }),
    expect: 'invalid_attributes',
  },
  {
    name: 'event attribute value 129',
    line: row({ type: 'e', name: 'n', attributes: { a: s(129) } }),
    expect: 'invalid_attributes',
  },
  {
    name: 'event attribute value boolean',
    line: row({ type: 'e', name: 'n', attributes: { a: true } }),
    expect: 'invalid_attributes',
  },
  {
    name: 'event attributes null',
    line: row({ type: 'e', name: 'n', attributes: null }),
    expect: 'ok',
    row: { type: 'e', name: 'n' },
  },

  // customer_ids
  {
    name: 'customer_ids.customer_id',
    line: row({ customer_ids: { customer_id: 'cust-9', email: 'ignored@example.com' } }),
    expect: 'ok',
    row: { customer_id: 'cust-9' },
  },
  { name: 'customer_ids without customer_id', line: row({ customer_ids: {} }), expect: 'ok' },
  {
    name: 'customer_id 128',
    line: row({ customer_ids: { customer_id: s(128) } }),
    expect: 'ok',
    row: { customer_id: s(128) },
  },
  {
    name: 'customer_id 129',
    line: row({ customer_ids: { customer_id: s(129) } }),
    expect: 'invalid_customer_ids',
  },
  {
    name: 'customer_id empty',
    line: row({ customer_ids: { customer_id: '' } }),
    expect: 'invalid_customer_ids',
  },
  {
    name: 'customer_id a number',
    line: row({ customer_ids: { customer_id: 5 } }),
    expect: 'invalid_customer_ids',
  },
  { name: 'customer_ids a string', line: row({ customer_ids: 'cust-9' }), expect: 'invalid_customer_ids' },

  // other typed fields
  {
    name: 'lat and lng',
    line: row({ lat: 52.52, lng: -13.4 }),
    expect: 'ok',
    row: { lat: 52.52, lng: -13.4 },
  },
  { name: 'lat a string', line: row({ lat: '52.5' }), expect: 'invalid_lat' },
  { name: 'lng 1e999', line: row({ lng: 0 }).replace('"lng":0', '"lng":1e999'), expect: 'invalid_lng' },
  {
    name: 'nth and sec_since_last_session',
    line: row({ nth: 3, sec_since_last_session: 86400 }),
    expect: 'ok',
    row: { nth: 3, sec_since_last_session: 86400 },
  },
  { name: 'nth fractional', line: row({ nth: 1.5 }), expect: 'invalid_nth' },
  {
    name: 'sec_since_last_session a string',
    line: row({ sec_since_last_session: '5' }),
    expect: 'invalid_sec_since_last_session',
  },
  {
    name: 'booleans',
    line: row({ device_new: true, jailbroken: false, limit_advertising: true }),
    expect: 'ok',
    row: { device_new: true, limit_advertising: true },
  },
  { name: 'boolean as a string', line: row({ jailbroken: 'true' }), expect: 'invalid_jailbroken' },
  { name: 'boolean as 1', line: row({ device_new: 1 }), expect: 'invalid_device_new' },

  // whole line
  { name: 'invalid JSON', line: '{"type":', expect: 'invalid_json', uuid: null },
  { name: 'an array', line: '[]', expect: 'not_an_object', uuid: null },
]

describe('validateSdkLine', () => {
  it.each(cases)('$name → $expect', (c) => {
    const result = validateSdkLine(c.line, 3, ctx)
    if (c.expect === 'ok') {
      expect(result).toEqual({ kind: 'ok', row: expectedRow(3, c.row) })
    } else {
      expect(result).toMatchObject({
        kind: 'reject',
        line: 3,
        reason: c.expect,
        uuid: c.uuid === undefined ? UUID : c.uuid,
      })
      expect(result.kind === 'reject' && result.detail.length).toBeGreaterThan(0)
    }
  })

  it.each(SDK_STRING_FIELDS)('%s: 255 characters ok, 256 refused, a number refused', (field) => {
    expect(validateSdkLine(row({ [field]: s(255) }), 1, ctx)).toEqual({
      kind: 'ok',
      row: expectedRow(1, { [field]: s(255) }),
    })
    expect(validateSdkLine(row({ [field]: s(256) }), 1, ctx)).toMatchObject({ reason: `invalid_${field}` })
    expect(validateSdkLine(row({ [field]: 1 }), 1, ctx)).toMatchObject({ reason: `invalid_${field}` })
  })

  it.each([...SDK_NUMBER_FIELDS, ...SDK_INTEGER_FIELDS, ...SDK_BOOLEAN_FIELDS])(
    '%s refuses an object',
    (field) => {
      expect(validateSdkLine(row({ [field]: {} }), 1, ctx)).toMatchObject({ reason: `invalid_${field}` })
    },
  )

  it('maps every field of a full raw-log row', () => {
    const full = {
      type: 'e',
      uuid: UUID,
      install_uuid: INSTALL,
      at_millis: RECEIVED_AT - 1000,
      device_uuid: 'dev-1',
      session_uuid: 'sess-1',
      customer_ids: { customer_id: 'cust-1' },
      name: 'Purchase',
      attributes: { sku: 'A-1', qty: 2 },
      app_ver: '5.2.0',
      os_ver: '17.1',
      platform: 'iOS',
      model: 'iPhone15,2',
      country: 'de',
      language: 'de',
      device_timezone: 'Europe/Berlin',
      push_token: 'tok',
      push_status: 'Enabled (Prominent)',
      carrier: 'Telekom',
      browser: '',
      bundle_id: 'com.example.app',
      user_type: 'known',
      library_ver: 'iOSa_5.2.0',
      advertising_id: 'idfa-1',
      birth_date: '1990-01-01',
      lat: 52.5,
      lng: 13.4,
      nth: 12,
      sec_since_last_session: 3600,
      device_new: false,
      jailbroken: false,
      limit_advertising: true,
    }
    const { customer_ids: _ids, ...rest } = full
    expect(validateSdkLine(JSON.stringify(full), 1, ctx)).toEqual({
      kind: 'ok',
      row: { ...rest, line: 1, customer_id: 'cust-1', attributes: { sku: 'A-1', qty: '2' } },
    })
  })

  it('honours configured windows', () => {
    const narrow = { receivedAt: RECEIVED_AT, pastWindowMs: HOUR, futureWindowMs: 0 }
    expect(validateSdkLine(row({ at_millis: RECEIVED_AT - HOUR }), 1, narrow).kind).toBe('ok')
    expect(validateSdkLine(row({ at_millis: RECEIVED_AT - HOUR - 1 }), 1, narrow)).toMatchObject({
      reason: 'at_millis_out_of_window',
    })
    expect(validateSdkLine(row({ at_millis: RECEIVED_AT + 1 }), 1, narrow)).toMatchObject({
      reason: 'at_millis_out_of_window',
    })
  })

  it('refuses lines over maxLineBytes', () => {
    const line = row()
    expect(validateSdkLine(line, 1, { ...ctx, maxLineBytes: line.length }).kind).toBe('ok')
    expect(validateSdkLine(line, 1, { ...ctx, maxLineBytes: line.length - 1 })).toMatchObject({
      reason: 'line_too_long',
      uuid: null,
    })
  })
})

describe('validateSdkBody', () => {
  it('validates a mixed body line by line', () => {
    const U2 = '11111111-2222-3333-4444-555555555555'
    const U3 = '33333333-2222-3333-4444-555555555555'
    const text = [
      row(), // 1
      '', // 2
      row({ type: 'e', uuid: U2, name: 'Viewed' }), // 3
      'not json', // 4
      row({ type: 'c' }), // 5: uuid of line 1
      row({ uuid: U3, install_uuid: '' }), // 6
      row({ uuid: U3, type: 'c' }), // 7: line 6 was refused, its uuid is free
      '  ', // 8
      '',
    ].join('\r\n')
    const result = validateSdkBody(Buffer.from(text), ctx)
    expect(result.lines).toBe(6)
    expect(result.rows).toEqual([
      expectedRow(1),
      expectedRow(3, { type: 'e', uuid: U2, name: 'Viewed' }),
      expectedRow(7, { type: 'c', uuid: U3 }),
    ])
    expect(result.rejects.map(({ line, uuid, reason }) => ({ line, uuid, reason }))).toEqual([
      { line: 4, uuid: null, reason: 'invalid_json' },
      { line: 5, uuid: UUID, reason: 'duplicate_in_body' },
      { line: 6, uuid: U3, reason: 'invalid_install_uuid' },
    ])
    expect(result.rejects[1]?.detail).toBe('uuid already used on line 1')
  })

  it('refuses over-long lines in a body and keeps numbering', () => {
    const result = validateSdkBody(Buffer.from(`${row({ pad: s(300) })}\n${row()}\n`), {
      ...ctx,
      maxLineBytes: 200,
    })
    expect(result.rows.map((r) => r.line)).toEqual([2])
    expect(result.rejects).toMatchObject([{ line: 1, reason: 'line_too_long', uuid: null }])
  })
})
