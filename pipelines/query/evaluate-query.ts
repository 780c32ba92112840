import { DateTime } from 'luxon'
import { windowStart } from './compile-query.ts'
import { eventOnlyDimension, type Dimension, type Metric } from './query-fields.ts'
import { isNumeric, type Condition, type ParsedQuery } from './parse-query.ts'
import type { ResultRow } from './result-set.ts'

/**
 * A plain in-memory evaluator of a checked query over events and sessions, written from the
 * semantics in docs/query-api.md rather than from the SQL: the reference the compiler is checked
 * against (test/integration/query-compiler-property.test.ts). Row at a time, no cleverness. Times
 * are milliseconds since the epoch. Not covered: profiles.
 */

export interface QueryEventRow {
  app_id: string
  install_uuid: string
  customer_id: string
  session_uuid: string
  event_name: string
  event_time: number
  attributes: Record<string, string>
  ltv_change: number
  country: string
  language: string
  app_version: string
  os_version: string
  platform: string
  model: string
  source: string
}

export interface QuerySessionRow {
  app_id: string
  session_uuid: string
  install_uuid: string
  customer_id: string
  started_at: number
  app_ver: string
  os_ver: string
  platform: string
  country: string
}

/** A row of the SDK's raw log, as far as session lengths read it. */
export interface QueryRawLogRow {
  app_id: string
  session_uuid: string
  /** 's' session start, 'e' event, 'c' close. */
  type: string
  at: number
}

interface Fact {
  kind: 'e' | 's'
  app: string
  t: number
  uid: string
  session_uuid: string
  columns: Record<string, string>
  attributes: Record<string, string>
  ltv: number
  birth: number | undefined
}

const userOf = (install: string, customer: string) =>
  install !== '' ? install : customer !== '' ? `customer:${customer}` : ''

/** A number as the engine's toFloat64OrNull reads plain decimal text (the texts the tests use). */
const toNumber = (text: string | null): number | null =>
  text !== null && /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : null

function timeText(unit: string, t: number, zone: string): string {
  const d = DateTime.fromMillis(t, { zone })
  switch (unit) {
    case 'week':
      return d.startOf('week').toISODate()!
    case 'month':
      return d.toFormat('yyyy-MM')
    case 'hour':
      return d.toFormat('yyyy-MM-dd HH:00')
    default:
      return d.toISODate()!
  }
}

function dimensionValue(d: Dimension, f: Fact, zone: string): string | null {
  switch (d.kind) {
    case 'time':
      return timeText(d.unit, f.t, zone)
    case 'birth_day':
      return f.birth === undefined ? null : timeText('day', f.birth, zone)
    case 'new_device':
      return f.birth === undefined
        ? null
        : String(timeText('day', f.birth, zone) === timeText('day', f.t, zone))
    case 'column': {
      const v = f.columns[d.column] ?? ''
      return v === '' ? null : v
    }
    case 'attribute':
      return Object.hasOwn(f.attributes, d.key) ? f.attributes[d.key]! : null
    default:
      throw new Error('profile dimensions are not evaluated here')
  }
}

/** Whether a value (text of a dimension, or a metric's number) passes a condition. */
function passes(c: Condition, v: string | number | null, metric: boolean): boolean {
  const nonNull = c.operands.filter((o): o is string | number => o !== null)
  const hasNull = nonNull.length < c.operands.length
  const ordered = ['<', '<=', '>', '>=', 'between'].includes(c.op)
  const allNumeric = nonNull.length > 0 && nonNull.every(isNumeric)
  const asNumber = metric || (allNumeric && (ordered || nonNull.some((o) => typeof o === 'number')))
  const x: string | number | null = metric ? v : asNumber ? toNumber(v as string | null) : v
  const b = (o: string | number) => (asNumber ? Number(o) : String(o))
  const inList = () => (x !== null && nonNull.some((o) => b(o) === x)) || (v === null && hasNull)
  switch (c.op) {
    case '==':
      return hasNull ? v === null : x !== null && x === b(nonNull[0]!)
    case '!=':
      return hasNull ? v !== null : x === null || x !== b(nonNull[0]!)
    case 'in':
      return inList()
    case 'not_in':
      return !inList()
    case '<':
      return x !== null && x < b(nonNull[0]!)
    case '<=':
      return x !== null && x <= b(nonNull[0]!)
    case '>':
      return x !== null && x > b(nonNull[0]!)
    case '>=':
      return x !== null && x >= b(nonNull[0]!)
    case 'between':
      return x !== null && x >= b(nonNull[0]!) && x <= b(nonNull[1]!)
    case 'in_groups':
      return groupOf(c, v as string | null) !== null
  }
}

function groupOf(c: Condition, v: string | null): string | null {
  for (const [group, members] of c.groups ?? []) {
    const hit = members.some((m) => (m === null ? v === null : v !== null && String(m) === v))
    if (hit) return group
  }
  return null
}

function finestTime(q: ParsedQuery): string | undefined {
  const units = q.dimensions.flatMap((d) => (d.dimension.kind === 'time' ? [d.dimension.unit] : []))
  return ['hour', 'day', 'week', 'month'].find((u) => (units as string[]).includes(u))
}

function metricValue(
  m: Metric,
  rows: Fact[],
  q: ParsedQuery,
  zone: string,
  from: number | undefined,
  lengths: ReadonlyMap<string, number>,
): number | null {
  const events = rows.filter((r) => r.kind === 'e')
  const distinct = (xs: string[]) => new Set(xs.filter((x) => x !== '')).size
  if (m.kind === 'aggregate') {
    const values = events.flatMap((r) => {
      const n = Object.hasOwn(r.attributes, m.key) ? toNumber(r.attributes[m.key]!) : null
      return n === null ? [] : [n]
    })
    if (values.length === 0) return null
    if (m.fn === 'sum') return values.reduce((s, n) => s + n, 0)
    if (m.fn === 'min') return Math.min(...values)
    if (m.fn === 'max') return Math.max(...values)
    return values.reduce((s, n) => s + n, 0) / values.length
  }
  switch (m.metric) {
    case 'users':
      return distinct(rows.map((r) => r.uid))
    case 'occurrences':
      return events.length
    case 'sessions':
      return distinct(rows.map((r) => r.session_uuid))
    case 'sessions_per_event':
      return events.length === 0 ? null : distinct(events.map((r) => r.session_uuid)) / events.length
    case 'ltv':
      return events.reduce((s, r) => s + r.ltv, 0)
    case 'average_session_length': {
      // Each distinct session (of its app) of the rows once, if the raw log gives it a length.
      const keys = rows.filter((r) => r.session_uuid !== '').map((r) => `${r.app}\n${r.session_uuid}`)
      const measured = [...new Set(keys)].flatMap((key) => {
        const length = lengths.get(key)
        return length === undefined ? [] : [length]
      })
      return measured.length === 0 ? null : measured.reduce((a, b) => a + b, 0) / measured.length
    }
    case 'new_users': {
      const unit = finestTime(q)
      const born = (r: Fact) =>
        r.birth !== undefined &&
        (unit
          ? timeText(unit, r.birth, zone) === timeText(unit, r.t, zone)
          : from === undefined || r.birth >= from)
      return distinct(rows.filter(born).map((r) => r.uid))
    }
    default:
      throw new Error(`${m.metric} is not evaluated here`)
  }
}

/**
 * Each session's length in seconds, by app and session: its last raw log row (any type) minus its
 * earliest start row; none without a start row.
 */
function sessionLengths(rawLog: QueryRawLogRow[]): Map<string, number> {
  const spans = new Map<string, { start: number | undefined; last: number }>()
  for (const r of rawLog) {
    if (r.session_uuid === '') continue
    const key = `${r.app_id}\n${r.session_uuid}`
    const span = spans.get(key) ?? { start: undefined, last: r.at }
    if (r.type === 's') span.start = Math.min(span.start ?? Infinity, r.at)
    span.last = Math.max(span.last, r.at)
    spans.set(key, span)
  }
  const lengths = new Map<string, number>()
  for (const [key, { start, last }] of spans) if (start !== undefined) lengths.set(key, (last - start) / 1000)
  return lengths
}

export function evaluateQuery(
  q: ParsedQuery,
  zone: string,
  now: number,
  data: { events: QueryEventRow[]; sessions: QuerySessionRow[]; rawLog?: QueryRawLogRow[] },
): ResultRow[] {
  const apps = new Set(q.appIds)
  const events = data.events.filter((e) => apps.has(e.app_id))
  const sessions = data.sessions.filter((s) => apps.has(s.app_id))
  const births = new Map<string, number>()
  const seen = (app: string, uid: string, t: number) => {
    if (uid === '') return
    const key = `${app}\n${uid}`
    births.set(key, Math.min(births.get(key) ?? Infinity, t))
  }
  for (const e of events) seen(e.app_id, userOf(e.install_uuid, e.customer_id), e.event_time)
  for (const s of sessions) seen(s.app_id, userOf(s.install_uuid, s.customer_id), s.started_at)

  const lengths = sessionLengths(data.rawLog ?? [])
  const dims = [
    ...q.dimensions.map((d) => d.dimension),
    ...q.conditions.flatMap((c) => (c.target.kind === 'dimension' ? [c.target.dimension] : [])),
  ]
  const readsSessions = !dims.some(eventOnlyDimension)
  const from = q.days === undefined ? undefined : windowStart(now, q.days, zone)
  const facts: Fact[] = []
  for (const e of events) {
    const uid = userOf(e.install_uuid, e.customer_id)
    facts.push({
      kind: 'e',
      app: e.app_id,
      t: e.event_time,
      uid,
      session_uuid: e.session_uuid,
      columns: {
        event_name: e.event_name,
        country: e.country,
        language: e.language,
        app_version: e.app_version,
        os_version: e.os_version,
        platform: e.platform,
        model: e.model,
        source: e.source,
      },
      attributes: e.attributes,
      ltv: e.ltv_change,
      birth: births.get(`${e.app_id}\n${uid}`),
    })
  }
  if (readsSessions)
    for (const s of sessions) {
      const uid = userOf(s.install_uuid, s.customer_id)
      facts.push({
        kind: 's',
        app: s.app_id,
        t: s.started_at,
        uid,
        session_uuid: s.session_uuid,
        columns: {
          country: s.country,
          app_version: s.app_ver,
          os_version: s.os_ver,
          platform: s.platform,
          source: 'sdk',
        },
        attributes: {},
        ltv: 0,
        birth: births.get(`${s.app_id}\n${uid}`),
      })
    }
  const kept = facts.filter(
    (f) =>
      (from === undefined || f.t >= from) &&
      q.conditions.every(
        (c) => c.target.kind === 'metric' || passes(c, dimensionValue(c.target.dimension, f, zone), false),
      ),
  )
  const groups = new Map<string, { values: (string | null)[]; rows: Fact[] }>()
  for (const f of kept) {
    const values = q.dimensions.map((d) => {
      const v = dimensionValue(d.dimension, f, zone)
      const grouping = q.conditions.find((c) => c.op === 'in_groups' && c.name === d.name)
      return grouping ? groupOf(grouping, v) : v
    })
    const key = JSON.stringify(values)
    const group = groups.get(key) ?? { values, rows: [] }
    group.rows.push(f)
    groups.set(key, group)
  }
  // No dimension: one total row, even over no rows.
  if (q.dimensions.length === 0 && groups.size === 0) groups.set('[]', { values: [], rows: [] })
  const out: ResultRow[] = []
  for (const { values, rows } of groups.values()) {
    const row: ResultRow = {}
    q.dimensions.forEach((d, i) => (row[d.name] = values[i] ?? null))
    for (const m of q.metrics) row[m.name] = metricValue(m.metric, rows, q, zone, from, lengths)
    const having = q.conditions.every(
      (c) => c.target.kind !== 'metric' || passes(c, row[c.name] as number | null, true),
    )
    if (having) out.push(row)
  }
  return out
}
