import { readFileSync } from 'node:fs'
import { gunzipSync } from 'node:zlib'
import { describe, expect, it } from 'vitest'
import { eventsDdl } from '../../bench/baselines/ddl.ts'
import {
  expectedCounters,
  gzipBodies,
  instantiate,
  LineKind,
  makeCustomers,
  MAX_BODY_BYTES,
  plainTemplates,
  profilePatchBodies,
  sdkBodies,
  UuidSpace,
  writeCounter,
  scrambleCounter,
  unscrambleCounter,
} from '../../bench/generate.ts'

const NOW = Date.UTC(2026, 0, 15)
const customers = makeCustomers(1, 500)
const parseLines = (body: Buffer) =>
  body
    .toString('utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l) as Record<string, unknown>)

describe('bench load generator', () => {
  it('is reproducible: the same seed gives the same customers and bodies', () => {
    expect(makeCustomers(1, 50)).toEqual(makeCustomers(1, 50))
    expect(makeCustomers(1, 50)).not.toEqual(makeCustomers(2, 50))
    const a = plainTemplates({
      seed: 1,
      app: 'app',
      customers,
      space: new UuidSpace('0000abcd', '0001'),
      count: 2,
      eventsPerBody: 250,
      now: NOW,
    })
    const b = plainTemplates({
      seed: 1,
      app: 'app',
      customers,
      space: new UuidSpace('0000abcd', '0001'),
      count: 2,
      eventsPerBody: 250,
      now: NOW,
    })
    expect(a[1]!.buffer.equals(b[1]!.buffer)).toBe(true)
  })

  it('makes plain bodies of 250 valid-looking events under 256 KB, ~300 bytes each', () => {
    const [t] = plainTemplates({
      seed: 3,
      app: 'app',
      customers,
      space: new UuidSpace('0000abcd', '0001'),
      count: 1,
      eventsPerBody: 250,
      now: NOW,
    })
    expect(t!.buffer.length).toBeLessThan(MAX_BODY_BYTES)
    const lines = parseLines(t!.buffer)
    expect(lines).toHaveLength(250)
    expect(t!.buffer.length / 250).toBeGreaterThan(200)
    expect(t!.buffer.length / 250).toBeLessThan(450)
    for (const l of lines) {
      expect(l.schema_url).toMatch(/^https:\/\/.*v0\.json$/)
      expect(l.app_uuid).toBe('app')
      expect(typeof l.event_name).toBe('string')
    }
  })

  it('patches fresh uuids per send, with duplicates in the body and of the previous body', () => {
    const space = new UuidSpace('0000abcd', '0001')
    const mix = { dupInBody: 0.05, dupPrevious: 0.05, invalid: 0.05 }
    const templates = plainTemplates({
      seed: 4,
      app: 'app',
      customers,
      space,
      count: 2,
      eventsPerBody: 250,
      now: NOW,
      mix,
    })
    const first = instantiate(templates[0]!, space.take(templates[0]!.freshCount))
    const second = instantiate(templates[1]!, space.take(templates[1]!.freshCount), first)
    const uuids = (body: Buffer) => parseLines(body).map((l) => l.uuid as string)
    const a = uuids(first.body)
    const b = uuids(second.body)
    expect(a.every((u) => space.parse(u) !== undefined)).toBe(true)
    // Line i carries counter i.
    a.forEach((u, i) => expect(space.parse(u)).toBe(first.counters[i]))
    const kinds = [...second.kinds]
    expect(kinds.filter((k) => k === LineKind.DupInBody).length).toBeGreaterThan(0)
    expect(kinds.filter((k) => k === LineKind.DupPrevious).length).toBeGreaterThan(0)
    expect(kinds.filter((k) => k === LineKind.Invalid).length).toBeGreaterThan(0)
    // DupPrevious lines repeat uuids of the first body; nothing else does.
    const inFirst = new Set(a)
    b.forEach((u, i) => expect(inFirst.has(u)).toBe(second.kinds[i] === LineKind.DupPrevious))
    // What the body asks to store: the uuids of its valid lines; in-body copies repeat fresh lines.
    const valid = b.filter((_, i) => second.kinds[i] !== LineKind.Invalid).map((u) => space.parse(u))
    expect(new Set(expectedCounters(second))).toEqual(new Set(valid))
    const fresh = new Set(b.filter((_, i) => second.kinds[i] === LineKind.Fresh))
    b.forEach((u, i) => {
      if (second.kinds[i] === LineKind.DupInBody) expect(fresh.has(u)).toBe(true)
    })
    expect(fresh.size).toBe(kinds.filter((k) => k === LineKind.Fresh).length)
  })

  it('fills gzip bodies with as many events as fit under 256 KB compressed', () => {
    const space = new UuidSpace('0000abcd', '0002')
    const bodies = gzipBodies({ seed: 5, app: 'app', customers, space, count: 2, now: NOW })
    for (const { instance, rows, inflatedBytes } of bodies) {
      expect(instance.body.length).toBeLessThan(MAX_BODY_BYTES)
      expect(instance.body.length).toBeGreaterThan(MAX_BODY_BYTES * 0.95)
      const inflated = gunzipSync(instance.body)
      expect(inflated.length).toBe(inflatedBytes)
      const lines = parseLines(inflated)
      expect(lines.length).toBe(instance.events)
      expect(lines.length).toBeGreaterThan(5000)
      lines.forEach((l, i) => expect(space.parse(l.uuid as string)).toBe(instance.counters[i]))
      // The storage baseline's rows: one per fresh line, with the events table's columns.
      const rowLines = parseLines(rows)
      expect(rowLines.length).toBe([...instance.kinds].filter((k) => k === LineKind.Fresh).length)
      expect(Object.keys(rowLines[0]!)).toContain('device_timezone')
    }
  })

  it('keeps SDK bodies under the limit and profile PATCH bodies in both syntaxes', () => {
    for (const b of sdkBodies(1, 'app', customers, 100, NOW)) {
      expect(b.body.length).toBeLessThan(MAX_BODY_BYTES)
      const rows = parseLines(b.body)
      expect(rows.length).toBe(b.rows)
      expect(new Set(rows.map((r) => r.type))).toEqual(new Set(['s', 'e', 'c']))
    }
    const patches = profilePatchBodies(1, 20).map((p) => ({
      ...p,
      json: JSON.parse(p.body) as Record<string, unknown>,
    }))
    expect(
      patches.filter((p) => p.syntax === 'attributes').every((p) => typeof p.json.attributes === 'object'),
    ).toBe(true)
    expect(patches.filter((p) => p.syntax === 'changes').every((p) => Array.isArray(p.json.changes))).toBe(
      true,
    )
    expect(patches.some((p) => p.syntax === 'changes')).toBe(true)
  })

  it('formats, parses and patches uuid counters', () => {
    const space = new UuidSpace('0123abcd', '00ff')
    const uuid = space.format(0xabcdef123)
    expect(uuid).toMatch(/^0123abcd-00ff-4000-8000-[0-9a-f]{12}$/)
    expect(space.parse(uuid)).toBe(0xabcdef123)
    expect(space.parse(uuid.replace('00ff', '0001'))).toBeUndefined()
    const buf = Buffer.from('x000000000000x')
    writeCounter(buf, 1, 2 ** 40 + 15)
    expect(buf.toString()).toBe(`x${space.format(2 ** 40 + 15).slice(24)}x`)
  })

  it('permutes counters: every one comes back, and consecutive ones are not in uuid order', () => {
    const space = new UuidSpace('0123abcd', '00ff')
    const counters = [
      0,
      1,
      2,
      3,
      1000,
      2 ** 32,
      2 ** 48 - 1,
      ...Array.from({ length: 2000 }, (_, i) => i * 977),
    ]
    for (const n of counters) expect(unscrambleCounter(scrambleCounter(n))).toBe(n)
    const uuids = Array.from({ length: 2000 }, (_, i) => space.format(i))
    expect(new Set(uuids).size).toBe(2000)
    expect(uuids.map((u) => space.parse(u))).toEqual(uuids.map((_, i) => i))
    // Sorted, neighbours in uuid order are far apart as counters (random uuids' order).
    const sorted = [...uuids].sort()
    const gaps = sorted.slice(1).map((u, i) => Math.abs(space.parse(u)! - space.parse(sorted[i]!)!))
    expect(gaps.filter((g) => g === 1).length).toBeLessThan(20)
  })

  it("extracts the events table's DDL from the migration", () => {
    const ddl = eventsDdl(
      readFileSync(new URL('../../schemas/clickhouse/002_events.sql', import.meta.url), 'utf8'),
    )
    expect(ddl).toMatch(/^CREATE TABLE IF NOT EXISTS events\s*\(/)
    expect(ddl).toMatch(/ENGINE = MergeTree[\s\S]*ORDER BY \(app_id, event_name, event_time, uuid\);$/)
    expect(ddl).not.toContain('event_uuids')
  })
})
