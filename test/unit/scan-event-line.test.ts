import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import runTask, { type CpuResult } from '../../pipelines/cpu/tasks.ts'
import {
  appOf,
  customerOf,
  EventPacker,
  packEvents,
  type PackedEvents,
} from '../../pipelines/events/event-row.ts'
import { EventLineScanner } from '../../pipelines/events/scan-event-line.ts'
import { validateEventBody, validateEventLine } from '../../pipelines/events/validate-event.ts'
import { ctx, EMOJI, HOUR, RECEIVED_AT, SCHEMA_URL, UUID } from '../helpers/event-line-fixtures.ts'

/** The events' identities as packed: the distinct apps and customers, the indexes, and each event's values. */
const identities = (p: PackedEvents) => ({
  apps: p.apps,
  appIndex: [...p.appIndex],
  customers: p.customers,
  customerIndex: [...p.customerIndex],
  events: p.uuid.map((uuid, i) => [appOf(p, i), customerOf(p, i), uuid]),
})

const line = (overrides: Record<string, unknown> = {}) =>
  JSON.stringify({
    schema_url: SCHEMA_URL,
    app_uuid: 'app-1',
    customer_id: 'customer-1',
    event_name: 'Screen Viewed',
    event_time: RECEIVED_AT - HOUR,
    uuid: UUID,
    attributes: { screen: 'catalog', duration_ms: 77174 },
    ...overrides,
  })

/** What the scanner made of `text` (undefined: not taken), as the packer holds it. */
function scanned(text: string) {
  const packer = new EventPacker(1)
  const scanner = new EventLineScanner(ctx, packer)
  const bytes = Buffer.from(text)
  if (!scanner.scan(bytes, 0, bytes.length)) return undefined
  scanner.take(1)
  return packer.packed()
}

/** The full path's packed event for `text` (undefined: refused). */
function checked(text: string) {
  const r = validateEventLine(text, 1, ctx)
  return r.kind === 'ok' ? packEvents([r.event]) : undefined
}

describe('EventLineScanner', () => {
  it('takes a line of the usual shape and writes the bytes the full path writes', () => {
    for (const text of [
      line(),
      line({ attributes: undefined, ltv_change: -299 }),
      line({
        customer_id: `ü${EMOJI}`,
        event_name: 'Ünïcode \u2028 name',
        attributes: { ключ: 'значение', n: 0 },
      }),
      ` \t${line({ attributes: {} })}\r `,
      line({ app_uuid: 'x'.repeat(128), attributes: { ['a'.repeat(128)]: 'v'.repeat(128) } }),
    ]) {
      const fast = scanned(text)
      expect(fast, text).toBeDefined()
      const full = checked(text)!
      expect(Buffer.from(fast!.own)).toEqual(Buffer.from(full.own))
      expect([identities(fast!), [...fast!.keyHash]]).toEqual([identities(full), [...full.keyHash]])
    }
  })

  it('leaves every other spelling to the full path', () => {
    const leftOver = [
      line({ customer_id: 'a"b' }), // an escape
      line({ uuid: UUID.toUpperCase() }), // canonicalised by the full path
      line({ extra: 1 }), // a member it does not know
      line({ attributes: { '1st': 'x' } }), // a name JavaScript may order first
      line({ attributes: { n: 1.5 } }),
      `${line().slice(0, -1)},"uuid":"${UUID}"}`, // a member twice: JSON.parse keeps the last
      line({ ltv_change: '5' }),
      line().replace(`"event_time":${RECEIVED_AT - HOUR}`, `"event_time":${RECEIVED_AT - HOUR}.0`),
      line().replace(`"event_time":${RECEIVED_AT - HOUR}`, '"event_time":-0'),
      line({ event_time: RECEIVED_AT + 49 * HOUR }), // out of the window: refused
      line({ customer_id: 'x'.repeat(129) }), // too long: refused
      line({ schema_url: 'ftp://x/v0.json' }),
      `${line()} x`,
    ]
    for (const text of leftOver) expect(scanned(text), text).toBeUndefined()
    // and those the full path takes come out the same through a whole body
    const body = Buffer.from(leftOver.join('\n'))
    expect(taskResult(body)).toEqual(fullPathResult(body))
  })

  it('never takes a line the full path refuses, and writes what the full path writes (generated lines)', () => {
    let taken = 0
    let valid = 0
    fc.assert(
      fc.property(generatedLine, (text) => {
        const fast = scanned(text)
        const full = checked(text)
        if (full) valid++
        if (!fast) return
        taken++
        expect(full, text).toBeDefined()
        expect(Buffer.from(fast.own).toString('hex')).toBe(Buffer.from(full!.own).toString('hex'))
        expect(identities(fast)).toEqual(identities(full!))
      }),
      { numRuns: 10_000, seed: 20261126 },
    )
    // A good share of the valid lines are of the usual shape (the others spell something another
    // way): the property is not met by declining everything.
    expect(taken).toBeGreaterThan(150)
    expect(taken).toBeGreaterThan(valid / 8)
  })
})

describe('the server-upload task with the scanner', () => {
  it('gives the result the full path gives, duplicates in the body across both paths included', () => {
    const upper = UUID.toUpperCase()
    const body = Buffer.from(
      [
        line(), // 1: scanned
        line({ uuid: upper }), // 2: full path, same canonical uuid: duplicate of line 1
        line({ uuid: UUID.replace('6f', '7f'), extra: true }), // 3: full path
        line({ uuid: UUID.replace('6f', '7f') }), // 4: scanned, duplicate of line 3
        line({ app_uuid: 'app-2' }), // 5: another app, same uuid: not a duplicate
        '{"broken":',
        '',
        line({ uuid: UUID.replace('6f', '8f'), customer_id: `c${EMOJI}` }), // 8: scanned
      ].join('\r\n'),
    )
    const result = taskResult(body)
    expect(result).toEqual(fullPathResult(body))
    expect([...result.events.line]).toEqual([1, 3, 5, 8])
    expect(result.rejects.map((r) => [r.line, r.reason, r.detail])).toEqual([
      [2, 'duplicate_in_body', 'uuid already used on line 1'],
      [4, 'duplicate_in_body', 'uuid already used on line 3'],
      [6, 'invalid_json', expect.any(String)],
    ])
  })
})

function taskResult(body: Buffer) {
  const r: CpuResult = runTask({
    kind: 'server-upload',
    body,
    encoding: 'identity',
    receivedAt: ctx.receivedAt,
    pastWindowMs: ctx.pastWindowMs,
    futureWindowMs: ctx.futureWindowMs,
    maxInflatedBytes: 1 << 20,
    maxRejects: 100,
  })
  if (r.kind !== 'server-upload') throw new Error(`unexpected ${r.kind}`)
  return { ...r, events: { ...r.events, own: Buffer.from(r.events.own), keyHash: [...r.events.keyHash] } }
}

function fullPathResult(body: Buffer) {
  const r = validateEventBody(body, { ...ctx, maxRejects: 100 })
  const events = packEvents(r.events)
  return {
    kind: 'server-upload',
    events: { ...events, own: Buffer.from(events.own), keyHash: [...events.keyHash] },
    rejects: r.rejects,
    rejected: r.rejected,
    lines: r.lines,
  }
}

// ---------------------------------------------------------------------------------------------
// Lines near the usual shape, spelt every way the scanner must either take exactly or decline.

const space = fc.constantFrom('', '', '', ' ', '\t', '\r', ' \t ')
const plainChar = fc.constantFrom('a', 'Z', '0', ' ', '-', '_', 'é', EMOJI, '\u2028', '/')
const escapedChar = fc.constantFrom('"', '\\', '\u0001', '\n')
const text = (max: number) =>
  fc.oneof(
    { arbitrary: fc.array(plainChar, { minLength: 1, maxLength: 24 }).map((cs) => cs.join('')), weight: 12 },
    {
      arbitrary: fc.array(fc.oneof(plainChar, escapedChar), { maxLength: 24 }).map((cs) => cs.join('')),
      weight: 2,
    },
    {
      arbitrary: fc
        .constantFrom(0, 1, max - 1, max, max + 1)
        .chain((n) => fc.constantFrom('a', 'é', EMOJI).map((c) => c.repeat(n))),
      weight: 2,
    },
  )
/** Mostly `valid`, now and then one of `others`. */
const mostly = <T>(valid: fc.Arbitrary<T>, ...others: fc.Arbitrary<T>[]) =>
  fc.oneof(
    { arbitrary: valid, weight: 6 * others.length },
    ...others.map((arbitrary) => ({ arbitrary, weight: 1 })),
  )
// A string as JSON writes it, or now and then with an escape JSON.stringify would not use.
const stringLiteral = (s: string) =>
  s.length > 0 && s.length % 7 === 0 ? `"\\u0061${JSON.stringify(s).slice(1)}` : JSON.stringify(s)
const integerSpelling = (n: number) =>
  mostly(fc.constant(String(n)), fc.constantFrom(`${n}.0`, `${n}e0`, n === 0 ? '-0' : `0${Math.abs(n)}`))
const wrong = fc.constantFrom('null', 'true', '[]', '{}', '"x"', '1.5', '1e999')
const eventTime = fc
  .oneof(
    fc.integer({ min: RECEIVED_AT - 73 * HOUR, max: RECEIVED_AT + 49 * HOUR }),
    fc.constantFrom(RECEIVED_AT - 72 * HOUR, RECEIVED_AT + 48 * HOUR, RECEIVED_AT - 72 * HOUR - 1, 0),
  )
  .chain(integerSpelling)
const integer = fc
  .oneof(
    fc.integer({ min: -1000, max: 1000 }),
    fc.constantFrom(0, 999_999_999_999_999, 1_000_000_000_000_000, -(2 ** 53)),
  )
  .chain(integerSpelling)
const uuid = mostly(
  fc.uuid().map((u) => JSON.stringify(u)),
  fc.uuid().map((u) => JSON.stringify(u.toUpperCase())),
  fc.uuid().map((u) => JSON.stringify(u.replaceAll('-', ''))),
  fc.constantFrom('"abc"', '"6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4g"', '""'),
  wrong,
)
const attributeName = mostly(
  text(128),
  fc.constantFrom('screen', 'duration_ms', '', '__proto__', '42', '1st', 'constructor', '_ga'),
)
const attributeValue = mostly(fc.oneof(text(128).map(stringLiteral), integer), wrong)
const attributes = mostly(
  fc
    .array(fc.tuple(attributeName, space, attributeValue), { maxLength: 6 })
    .map((members) => `{${members.map(([n, sp, v]) => `${JSON.stringify(n)}${sp}:${sp}${v}`).join(',')}}`),
  fc.constantFrom(51, 50).map((n) => `{${Array.from({ length: n }, (_, i) => `"a${i}":"v"`).join(',')}}`),
  fc.constant('{"a":"1","a":"2"}'),
  wrong,
)
const members: Record<string, fc.Arbitrary<string>> = {
  schema_url: mostly(
    fc.constant(JSON.stringify(SCHEMA_URL)),
    fc.constantFrom(
      '"https://x/v1.json"',
      '"ftp://x/v0.json"',
      '" https://x/v0.json"',
      '"https://x/v0.JSON"',
    ),
    wrong,
  ),
  app_uuid: mostly(fc.constant('"app-1"'), text(128).map(stringLiteral), wrong),
  customer_id: mostly(text(128).map(stringLiteral), wrong),
  event_name: mostly(text(128).map(stringLiteral), wrong),
  event_time: mostly(eventTime, wrong),
  uuid,
  attributes,
  ltv_change: mostly(integer, wrong),
}
const generatedLine = fc
  .tuple(
    mostly(fc.constant(Object.keys(members)), fc.shuffledSubarray(Object.keys(members), { minLength: 5 })),
    fc.boolean(),
    mostly(fc.constant(''), fc.constantFrom(',"extra":1', ',"uuid":"x"')),
    space,
  )
  .chain(([names, compact, tail, sp]) =>
    fc.tuple(...names.map((name) => members[name]!)).map((values) => {
      const s = compact ? '' : sp
      const body = names.map((name, i) => `${s}"${name}"${s}:${s}${values[i]}`).join(',')
      return `${sp}{${body}${tail}${s}}${sp}`
    }),
  )
