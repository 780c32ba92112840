import { DateTime } from 'luxon'
import { eventOnlyDimension, type Dimension, type Metric, type TimeUnit } from './query-fields.ts'
import { isNumeric, type Condition, type Operand, type ParsedQuery } from './parse-query.ts'
import { rollupPlan, sessionRollupFits } from './rollup-fit.ts'

/**
 * The Query API compiler: a checked query (parse-query.ts) to one parameterised ClickHouse query.
 * Pure: no I/O, no clock (the caller's `now`), no user value in the SQL text (every value is a
 * {pN:Type} parameter; identifiers and expressions come from fixed lists).
 *
 * Shape (docs/query-api.md states the semantics):
 *   facts: the apps' `events` rows (kind 'e') UNION ALL their `sessions` rows (kind 's'), each
 *          with its time `t` and its user (the install, or the customer when there is none);
 *          sessions are left out when a dimension or condition reads what only events have
 *   LEFT JOIN each user's first appearance (birth), when new_users, new_device or birth_day is
 *   WHERE the dimension conditions, GROUP BY the dimensions, HAVING the metric conditions,
 *   ORDER BY, LIMIT limit + 1 (one more row says the answer was truncated).
 * With average_session_length, two GROUP BYs: by the dimensions and the session (the other
 * metrics as aggregate states), then each session's length (from `raw_log`) joined to those rows,
 * and by the dimensions (the states merged, the lengths averaged): see sessionStages.
 * Profiles (the `profiles` metric) are a query of their own over `profiles FINAL`.
 *
 * A query whose metrics, dimensions and conditions all fit the rollup (rollup-fit.ts) reads
 * `query_rollup` instead of the facts: the same SELECT, WHERE, GROUP BY, HAVING and ORDER BY over
 * its hourly rows, sums and uniq states in place of counts over events and sessions.
 */

export interface QueryContext {
  /** Milliseconds since the epoch: `days` counts back from it. */
  now: number
  /** IANA zone of the day boundaries (the first app's). */
  timeZone: string
  /** The profile db the profiles metric counts. */
  profiledbId: number
  /** false: answer from the raw tables even when a rollup fits (to compare both; default true). */
  rollups?: boolean
}

export interface CompiledQuery {
  sql: string
  params: Record<string, unknown>
  /** The result columns, in order: alias, the requested name, and whether it is a metric. */
  columns: { alias: string; name: string; metric: boolean }[]
  /** Whether the query reads `sessions` beside `events` (or the rollup's session rows). */
  readsSessions: boolean
  /** Where the rows come from: the raw tables, the rollup (migration 027), or the session rollup (038). */
  source: 'raw' | 'query_rollup' | 'query_session_hours'
  /** The requested names of the metrics whose numbers are estimates (the `query` echo says so). */
  estimated: string[]
}

/**
 * The query's parameters. A value bound twice with the same type is one parameter: each costs the
 * engine a setting to parse per query (chdb-side-connection.ts), and an `in_groups` condition names
 * its groups' members twice (the dimension's value and the condition).
 */
class Params {
  readonly values: Record<string, unknown> = {}
  private readonly names = new Map<string, string>()
  bind(type: string, value: unknown): string {
    const key = `${type}\u0000${typeof value === 'bigint' ? value.toString() : JSON.stringify(value)}`
    let name = this.names.get(key)
    if (name === undefined) {
      name = `p${this.names.size}`
      this.names.set(key, name)
      this.values[name] = value
    }
    return `{${name}:${type}}`
  }
}

const msParam = (params: Params, ms: number) => `fromUnixTimestamp64Milli(${params.bind('Int64', ms)}, 'UTC')`

/**
 * Text of a time bucket of `t` (a DateTime64 in UTC) in the zone `tz` (a bound parameter); with no
 * zone, `t` is already a UTC Date (the rollup's days, UTC_DAY), and the text is written on it as
 * the rollup's daily projection keeps it, so that the engine answers from it.
 */
function timeText(unit: TimeUnit | 'birth', t: string, tz: string | undefined): string {
  if (tz === undefined) {
    switch (unit) {
      case 'day':
        return `toString(${t})`
      case 'week':
        return `toString(toMonday(${t}))`
      case 'month':
        return `formatDateTime(${t}, '%Y-%m')`
      default:
        throw new Error(`no ${unit} bucket of a UTC day`)
    }
  }
  switch (unit) {
    case 'day':
    case 'birth':
      return `toString(toDate(${t}, ${tz}))`
    case 'week':
      return `toString(toMonday(toDateTime(${t}, ${tz})))`
    case 'month':
      return `formatDateTime(toDateTime(${t}, ${tz}), '%Y-%m')`
    case 'hour':
      return `formatDateTime(toDateTime(${t}, ${tz}), '%Y-%m-%d %H:00')`
  }
}

/**
 * Dimensions whose value is a Nullable(String) of the facts row (its time is `t`; with no zone, a
 * UTC day of the rollup: only time units and columns are read so).
 */
function dimensionValue(d: Dimension, tz: string | undefined, t: string): string {
  if (tz === undefined && d.kind !== 'time' && d.kind !== 'column')
    throw new Error(`${d.kind} is not a dimension of the rollup's days`)
  switch (d.kind) {
    case 'time':
      return timeText(d.unit, t, tz)
    case 'birth_day':
      return `if(b.found = 1, ${timeText('birth', 'b.birth', tz)}, NULL)`
    case 'new_device':
      return `if(b.found = 1, if(toDate(b.birth, ${tz}) = toDate(f.t, ${tz}), 'true', 'false'), NULL)`
    case 'column':
      return `nullIf(toString(f.${d.column}), '')`
    case 'attribute':
      return `if(mapContains(f.attributes, ${'$KEY'}), f.attributes[${'$KEY'}], NULL)`
    case 'profile_attribute_key':
    case 'profile_value_string':
      throw new Error('profile dimensions are compiled by compileProfiles')
  }
}

function dimensionSql(params: Params, d: Dimension, tz: string | undefined, t = 'f.t'): string {
  const sql = dimensionValue(d, tz, t)
  if (d.kind !== 'attribute') return sql
  const key = params.bind('String', d.key)
  return sql.replaceAll('$KEY', key)
}

const needsBirth = (q: ParsedQuery) =>
  q.metrics.some((m) => m.metric.kind === 'simple' && m.metric.metric === 'new_users') ||
  [...q.dimensions.map((d) => d.dimension), ...conditionDimensions(q)].some(
    (d) => d.kind === 'birth_day' || d.kind === 'new_device',
  )

const wantsLengths = (q: ParsedQuery) =>
  q.metrics.some((m) => m.metric.kind === 'simple' && m.metric.metric === 'average_session_length')

const conditionDimensions = (q: ParsedQuery): Dimension[] =>
  q.conditions.flatMap((c) => (c.target.kind === 'dimension' ? [c.target.dimension] : []))

/** The finest time dimension asked: new_users counts users born in the row's bucket of it. */
function finestTime(q: ParsedQuery): TimeUnit | undefined {
  const units = q.dimensions.flatMap((d) => (d.dimension.kind === 'time' ? [d.dimension.unit] : []))
  for (const unit of ['hour', 'day', 'week', 'month'] as const) if (units.includes(unit)) return unit
  return undefined
}

/**
 * An aggregate call over the facts rows: `fn(args)` in one GROUP BY; with session lengths, a state
 * per group and session in the inner GROUP BY and its merge in the outer one (sessionStages).
 */
type Aggregate = (fn: string, args: string) => string
const direct: Aggregate = (fn, args) => `${fn}(${args})`

function metricSql(
  params: Params,
  m: Metric,
  q: ParsedQuery,
  tz: string,
  windowFrom: string | undefined,
  agg: Aggregate,
): string {
  if (m.kind === 'aggregate') {
    const key = params.bind('String', m.key)
    const value = `toFloat64OrNull(f.attributes[${key}])`
    const cond = `f.kind = 'e' AND mapContains(f.attributes, ${key})`
    return agg(`${m.fn}If`, `${value}, ${cond}`)
  }
  switch (m.metric) {
    case 'users':
      return agg('uniqExactIf', `f.uid, f.uid != ''`)
    case 'occurrences':
      return agg('countIf', `f.kind = 'e'`)
    case 'sessions':
      // In two stages every inner row is one session of its group: counted there, with no state
      // per row.
      return agg === direct
        ? agg('uniqExactIf', `f.session_uuid, f.session_uuid != ''`)
        : `uniqExactIf(g.session_uuid, g.session_uuid != '')`
    case 'sessions_per_event': {
      const events = agg('countIf', `f.kind = 'e'`)
      return `if(${events} = 0, NULL, ${agg('uniqExactIf', `f.session_uuid, f.kind = 'e' AND f.session_uuid != ''`)} / ${events})`
    }
    case 'average_session_length': {
      // In the outer GROUP BY (sessionStages): each row there is one session of the group, once
      // however many of its events matched; NULL when none has a length.
      const measured = `g.session_uuid != '' AND l.found = 1`
      return `if(countIf(${measured}) = 0, NULL, avgIf(l.length, ${measured}))`
    }
    case 'ltv':
      return agg('sumIf', `f.ltv_change, f.kind = 'e'`)
    case 'new_users': {
      const unit = finestTime(q)
      const born = unit
        ? `${timeText(unit, 'b.birth', tz)} = ${timeText(unit, 'f.t', tz)}`
        : windowFrom
          ? `b.birth >= ${windowFrom}`
          : '1'
      return agg('uniqExactIf', `f.uid, f.uid != '' AND b.found = 1 AND ${born}`)
    }
    case 'profiles':
      throw new Error('the profiles metric is compiled by compileProfiles')
  }
}

/**
 * A rollup row's UTC day, written as migration 036's projection groups by it: the engine answers
 * from a projection only when the query's keys and filters are computed from its own expressions.
 */
const UTC_DAY = 'toDate(f.hour)'

/** A metric of the rollup's rows (rollup-fit.ts lists which it keeps). */
function rollupMetricSql(m: Metric): string {
  if (m.kind !== 'simple') throw new Error('the rollup keeps no attribute aggregate')
  switch (m.metric) {
    case 'users':
      return 'uniqMerge(f.users)'
    case 'occurrences':
      return 'sum(f.occurrences)'
    case 'sessions':
      return 'uniqMerge(f.sessions)'
    case 'sessions_per_event':
      return `if(sum(f.occurrences) = 0, NULL, uniqMergeIf(f.sessions, f.kind = 'e') / sum(f.occurrences))`
    case 'ltv':
      return 'sum(f.ltv)'
    default:
      throw new Error(`the rollup does not keep ${m.metric}`)
  }
}

/** A condition on a value expression `v` (Nullable(String), or a number for a metric). */
function conditionSql(params: Params, c: Condition, v: string, metric: boolean): string {
  const nonNull = c.operands.filter((o): o is string | number => o !== null)
  const hasNull = nonNull.length < c.operands.length
  const text = (o: string | number) => params.bind('String', String(o))
  const num = (o: string | number) => params.bind('Float64', Number(o))
  // A dimension compares as text unless the client compares with JSON numbers (`[">", 5]`) or
  // orders (`<`, `between`) numeric text: then the stored text is read as a number.
  const ordered = ['<', '<=', '>', '>=', 'between'].includes(c.op)
  const allNumeric = nonNull.length > 0 && nonNull.every(isNumeric)
  const asNumber = metric || (allNumeric && (ordered || nonNull.some((o) => typeof o === 'number')))
  const x = metric ? v : asNumber ? `toFloat64OrNull(${v})` : v
  const bound = asNumber ? num : text
  const members = () =>
    asNumber
      ? params.bind('Array(Float64)', nonNull.map(Number))
      : params.bind('Array(String)', nonNull.map(String))
  const inList = () => {
    const parts: string[] = []
    if (nonNull.length > 0) parts.push(`(${x} IS NOT NULL AND ${x} IN ${members()})`)
    if (hasNull) parts.push(`${v} IS NULL`)
    return parts.length === 1 ? parts[0]! : `(${parts.join(' OR ')})`
  }
  switch (c.op) {
    case '==':
      return hasNull ? `${v} IS NULL` : `(${x} IS NOT NULL AND ${x} = ${bound(nonNull[0]!)})`
    case '!=':
      return hasNull ? `${v} IS NOT NULL` : `(${x} IS NULL OR ${x} != ${bound(nonNull[0]!)})`
    case 'in':
      return inList()
    case 'not_in':
      return `NOT ${inList()}`
    case '<':
    case '<=':
    case '>':
    case '>=':
      return `(${x} IS NOT NULL AND ${x} ${c.op} ${bound(nonNull[0]!)})`
    case 'between':
      return `(${x} IS NOT NULL AND ${x} >= ${bound(nonNull[0]!)} AND ${x} <= ${bound(nonNull[1]!)})`
    case 'in_groups':
      return `${groupValue(params, c, v)} IS NOT NULL`
  }
}

/** The group name of `v` under an in_groups condition (the first group listing it), else NULL. */
function groupValue(params: Params, c: Condition, v: string): string {
  const branches = (c.groups ?? []).flatMap(([group, members]) => {
    const values = members.filter((m): m is string | number => m !== null).map(String)
    const nulls = members.some((m) => m === null)
    const test = [
      ...(values.length > 0
        ? [`(${v} IS NOT NULL AND ${v} IN ${params.bind('Array(String)', values)})`]
        : []),
      ...(nulls ? [`${v} IS NULL`] : []),
    ].join(' OR ')
    return [`(${test})`, params.bind('String', group)]
  })
  return `multiIf(${branches.join(', ')}, NULL)`
}

/** Start of the `days` window: midnight, `days - 1` days before today, in the zone. */
export function windowStart(now: number, days: number, timeZone: string): number {
  return DateTime.fromMillis(now, { zone: timeZone })
    .startOf('day')
    .minus({ days: days - 1 })
    .toMillis()
}

function orderSql(q: ParsedQuery, aliasOf: Map<string, string>): string {
  const given = q.order.map((o) => `${aliasOf.get(o.name)} ${o.descending ? 'DESC' : 'ASC'}`)
  // Then every dimension, for an order that does not change between runs.
  const rest = q.dimensions
    .filter((d) => !q.order.some((o) => o.name === d.name))
    .map((d) => `${aliasOf.get(d.name)} ASC`)
  const all = [...given, ...rest]
  return all.length > 0 ? `ORDER BY ${all.join(', ')}` : ''
}

/** The sessions columns a replayed start may have stored differently (from the device's state). */
const SESSION_STATE_COLUMNS = new Set(['uid', 'country', 'app_version', 'os_version', 'platform'])

/** Where the facts go in the raw path's query until the columns it reads are known. */
const FACTS = '/* facts */'

export function compileQuery(q: ParsedQuery, ctx: QueryContext): CompiledQuery {
  if (q.metrics.some((m) => m.metric.kind === 'simple' && m.metric.metric === 'profiles'))
    return compileProfiles(q, ctx)
  const params = new Params()
  const plan = ctx.rollups === false ? undefined : rollupPlan(q, ctx.timeZone, ctx.now)
  // UTC days need no zone: no parameter for the engine to set.
  const tz = plan?.utcDays ? undefined : params.bind('String', ctx.timeZone)
  const apps = params.bind('Array(String)', q.appIds)
  const fromMs = q.days !== undefined ? windowStart(ctx.now, q.days, ctx.timeZone) : undefined
  const readsSessions = ![...q.dimensions.map((d) => d.dimension), ...conditionDimensions(q)].some(
    eventOnlyDimension,
  )
  if (plan) {
    // Window starts are local midnights: whole UTC hours in the zones the rollup serves, UTC
    // midnights when it is read by day.
    const since =
      fromMs === undefined
        ? []
        : plan.utcDays
          ? [`${UTC_DAY} >= ${params.bind('Date', new Date(fromMs).toISOString().slice(0, 10))}`]
          : [`f.hour >= toDateTime(${params.bind('Int64', Math.floor(fromMs / 1000))}, 'UTC')`]
    // The rollup's rows read directly, not through a subquery: analysing and planning the subquery
    // cost the engine more CPU than merging a month of its rows (docs/query-api.md, "Measured").
    const rows = {
      from: 'query_rollup AS f',
      where: [`f.app_id IN ${apps}`, ...(readsSessions ? [] : [`f.kind = 'e'`]), ...since],
      t: plan.utcDays ? UTC_DAY : 'f.hour',
    }
    return {
      ...assemble(q, params, tz, rows, [], (m) => rollupMetricSql(m)),
      readsSessions,
      source: 'query_rollup',
      estimated: plan.estimated,
    }
  }
  // The raw path always has a zone (only a rollup plan reads UTC days without one).
  const zone = tz ?? params.bind('String', ctx.timeZone)
  if (ctx.rollups !== false && sessionRollupFits(q, ctx.timeZone, ctx.now))
    return compileSessionRollup(q, params, zone, apps, fromMs)
  const from = fromMs !== undefined ? msParam(params, fromMs) : undefined
  const birth = needsBirth(q)
  const lengths = wantsLengths(q)

  const eventsUser = `if(install_uuid != '', install_uuid, if(customer_id != '', concat('customer:', customer_id), ''))`
  const sessionsUser = eventsUser
  // Each facts column: its alias, its events expression, its sessions expression.
  const columns: [string, string, string][] = [
    ['kind', `'e'`, `'s'`],
    ['app_id', 'app_id', 'app_id'],
    ['t', 'event_time', 'started_at'],
    ['uid', eventsUser, sessionsUser],
    ['session_uuid', 'session_uuid', 'session_uuid'],
    ['event_name', 'toString(event_name)', `''`],
    ['attributes', 'attributes', `CAST(map(), 'Map(String, String)')`],
    ['ltv_change', 'ltv_change', 'toInt64(0)'],
    ['country', 'toString(country)', 'toString(country)'],
    ['language', 'toString(language)', `''`],
    ['app_version', 'toString(app_version)', 'toString(app_ver)'],
    ['os_version', 'toString(os_version)', 'toString(os_ver)'],
    ['platform', 'toString(platform)', 'toString(platform)'],
    ['model', 'toString(model)', `''`],
    ['source', 'toString(source)', `'sdk'`],
  ]
  // Only the columns the query reads (`f.<alias>` in its text): the engine keeps a subquery's
  // unread columns, and reading every event's attributes for a count made it a third slower.
  const factsOf = (outer: string) => {
    const read = new Set([...outer.matchAll(/\bf\.(\w+)/g)].map((m) => m[1]))
    const kept = columns.filter(([alias]) => alias === 'kind' || read.has(alias))
    const list = (i: 1 | 2) => kept.map((c) => (c[i] === c[0] ? c[0] : `${c[i]} AS ${c[0]}`)).join(', ')
    const events = `SELECT ${list(1)}
    FROM events WHERE app_id IN ${apps}${from ? ` AND event_time >= ${from}` : ''}`
    // FINAL only when a column a replayed start could store differently is read (the user and
    // device columns come from the device's state at the time): the key and the start's own time
    // are the same in every copy, and every metric counts sessions distinct (FINAL took about a
    // tenth of the sessions-by-week shape's engine CPU).
    const final = kept.some(([alias]) => SESSION_STATE_COLUMNS.has(alias)) ? ' FINAL' : ''
    const sessions = `SELECT ${list(2)}
    FROM sessions${final} WHERE app_id IN ${apps}${from ? ` AND started_at >= ${from}` : ''}`
    return readsSessions ? `${events}\n    UNION ALL\n    ${sessions}` : events
  }

  const joins: string[] = []
  // Without FINAL: a raw log row stored twice (a replayed upload) is the same record, the same
  // `at`, and max, min and "has a start" do not change with a copy; FINAL took a third of the
  // query's engine CPU (docs/query-api.md, "Measured"). Joined to the distinct sessions of each
  // group, not to every facts row (sessionStages).
  const lengthsJoin = lengths
    ? `LEFT JOIN (
    SELECT app_id, session_uuid, 1 AS found,
      (toUnixTimestamp64Milli(max(at)) - toUnixTimestamp64Milli(minIf(at, type = 's'))) / 1000 AS length
    FROM raw_log WHERE app_id IN ${apps} AND session_uuid != ''
    GROUP BY app_id, session_uuid HAVING countIf(type = 's') > 0
  ) AS l ON l.app_id = g.app_id AND l.session_uuid = g.session_uuid`
    : undefined
  if (birth)
    joins.push(`LEFT JOIN (
    SELECT app_id, uid, 1 AS found, min(t) AS birth FROM (
      SELECT app_id, ${eventsUser} AS uid, event_time AS t FROM events WHERE app_id IN ${apps}
      UNION ALL
      SELECT app_id, ${sessionsUser} AS uid, started_at AS t FROM sessions FINAL WHERE app_id IN ${apps}
    ) WHERE uid != '' GROUP BY app_id, uid
  ) AS b ON b.app_id = f.app_id AND b.uid = f.uid`)

  const facts = { from: `(\n    ${FACTS}\n  ) AS f`, where: [], t: 'f.t' }
  const assembled = assemble(
    q,
    params,
    zone,
    facts,
    joins,
    (m, agg) => metricSql(params, m, q, zone, from, agg),
    lengthsJoin,
  )
  return {
    ...assembled,
    sql: assembled.sql.replace(FACTS, () => factsOf(assembled.sql)),
    readsSessions,
    source: 'raw',
    estimated: [],
  }
}

/**
 * Sessions and their lengths by time from the session rollup (migration 038): its session hours
 * stand for the facts (each row a session seen in an hour, as the raw path's distinct sessions of
 * the events and starts), its lengths for the raw log's, in the same two stages (sessionStages).
 * Exact: the same sessions and lengths the raw path reads.
 */
function compileSessionRollup(
  q: ParsedQuery,
  params: Params,
  tz: string,
  apps: string,
  fromMs: number | undefined,
): CompiledQuery {
  // Window starts are local midnights, whole UTC hours in the zones the rollup serves.
  const hourFrom =
    fromMs !== undefined ? `toDateTime(${params.bind('Int64', Math.floor(fromMs / 1000))}, 'UTC')` : undefined
  const rows = {
    from: 'query_session_hours AS f',
    where: [`f.app_id IN ${apps}`, ...(hourFrom ? [`f.hour >= ${hourFrom}`] : [])],
    t: 'f.hour',
  }
  // FINAL, not GROUP BY: the lengths' parts are mostly merged (one row per session), and reading
  // them merged cost the engine less than grouping a month of sessions by their uuid (the filter on
  // the start applies after the merge). ANY: one row per session on that side.
  const lengthsJoin = `ANY LEFT JOIN (
    SELECT app_id, session_uuid, 1 AS found,
      (toUnixTimestamp64Milli(last_at) - toUnixTimestamp64Milli(started_at)) / 1000 AS length
    FROM query_session_lengths FINAL WHERE app_id IN ${apps} AND started_at IS NOT NULL
  ) AS l ON l.app_id = g.app_id AND l.session_uuid = g.session_uuid`
  const assembled = assemble(
    q,
    params,
    tz,
    rows,
    [],
    (m, agg) => metricSql(params, m, q, tz, undefined, agg),
    lengthsJoin,
  )
  return { ...assembled, readsSessions: true, source: 'query_session_hours', estimated: [] }
}

/**
 * The SELECT over the rows `f` and their joins: dimensions, metrics, conditions. `rows` names them:
 * the FROM item (the facts subquery, or the rollup table), the conditions that select them, and the
 * expression of their time. With `lengthsJoin` (average_session_length), two stages (sessionStages).
 */
function assemble(
  q: ParsedQuery,
  params: Params,
  tz: string | undefined,
  rows: { from: string; where: string[]; t: string },
  joins: string[],
  metricOf: (m: Metric, agg: Aggregate) => string,
  lengthsJoin?: string,
): Pick<CompiledQuery, 'sql' | 'params' | 'columns'> {
  const columns: CompiledQuery['columns'] = []
  const aliasOf = new Map<string, string>()
  /** Dimensions asked for, by name: their alias holds the group (in_groups) or the value. */
  const groupedAlias = new Map<string, string>()
  const valueAlias = new Map<string, string>()
  const dimensions: string[] = []
  const groupBy: string[] = []
  q.dimensions.forEach((d, i) => {
    const alias = `d${i}`
    const grouping = q.conditions.find(
      (c) => c.op === 'in_groups' && c.target.kind === 'dimension' && c.name === d.name,
    )
    const value = dimensionSql(params, d.dimension, tz, rows.t)
    const expr = grouping ? groupValue(params, grouping, value) : value
    if (grouping) groupedAlias.set(d.name, alias)
    else valueAlias.set(d.name, alias)
    dimensions.push(`CAST(${expr} AS Nullable(String)) AS ${alias}`)
    groupBy.push(alias)
    aliasOf.set(d.name, alias)
    columns.push({ alias, name: d.name, metric: false })
  })
  // Two stages: the states of each group's aggregates per session, by call (a call made twice is
  // one state), merged in the outer GROUP BY.
  const states = new Map<string, string>()
  const staged: Aggregate = (fn, args) => {
    const call = `${fn}State(${args})`
    let alias = states.get(call)
    if (alias === undefined) {
      alias = `s${states.size}`
      states.set(call, alias)
    }
    return `${fn}Merge(g.${alias})`
  }
  const metrics: string[] = []
  q.metrics.forEach((m, i) => {
    const alias = `m${i}`
    metrics.push(`${metricOf(m.metric, lengthsJoin ? staged : direct)} AS ${alias}`)
    aliasOf.set(m.name, alias)
    columns.push({ alias, name: m.name, metric: true })
  })

  const where: string[] = [...rows.where]
  const having: string[] = []
  for (const c of q.conditions) {
    if (c.target.kind === 'metric') {
      having.push(conditionSql(params, c, aliasOf.get(c.name)!, true))
    } else if (c.op === 'in_groups' && groupedAlias.has(c.name)) {
      // The dimension's value is already its group (or NULL): the engine analyses the groups'
      // expression once instead of twice, which took it longer than reading the rows.
      where.push(`${groupedAlias.get(c.name)} IS NOT NULL`)
    } else if (valueAlias.has(c.name)) {
      // A condition on a dimension asked for reads its value by alias, for the same reason.
      where.push(conditionSql(params, c, valueAlias.get(c.name)!, false))
    } else {
      where.push(conditionSql(params, c, dimensionSql(params, c.target.dimension, tz, rows.t), false))
    }
  }
  const whereSql = where.length > 0 ? `WHERE ${where.map((w) => `(${w})`).join(' AND ')}` : ''
  const tail = (groups: string[]) => `${groups.length > 0 ? `GROUP BY ${groups.join(', ')}` : ''}
${having.length > 0 ? `HAVING ${having.map((h) => `(${h})`).join(' AND ')}` : ''}
${orderSql(q, aliasOf)}
LIMIT ${params.bind('UInt32', q.limit + 1)}`
  // The joins' unmatched rows must read as defaults (found = 0), whatever the server's profile says.
  const settings = joins.length > 0 || lengthsJoin ? '\nSETTINGS join_use_nulls = 0' : ''
  if (lengthsJoin) {
    const sql = sessionStages({
      dimensions,
      states: [...states].map(([call, alias]) => `${call} AS ${alias}`),
      metrics,
      inner: `FROM ${rows.from}\n  ${joins.join('\n  ')}\n${whereSql}`,
      groupBy,
      lengthsJoin,
    })
    return { sql: `${sql}\n${tail(groupBy)}${settings}`, params: params.values, columns }
  }
  const sql = `SELECT ${[...dimensions, ...metrics].join(',\n  ')}
FROM ${rows.from}
  ${joins.join('\n  ')}
${whereSql}
${tail(groupBy)}${settings}`
  return { sql, params: params.values, columns }
}

/**
 * average_session_length needs each session of a group once, with its length: an inner GROUP BY
 * of the facts by the dimensions and the session (the other metrics as states), the lengths joined
 * to its rows, and an outer GROUP BY by the dimensions (the states merged). Joining the lengths to
 * every facts row instead, and keeping each group's distinct (session, length) pairs, cost the
 * engine more than the hand-written query's DISTINCT and join (docs/query-api.md, "Measured").
 * Returns the query up to its outer FROM and joins; the caller adds GROUP BY and what follows.
 */
function sessionStages(s: {
  dimensions: string[]
  states: string[]
  metrics: string[]
  inner: string
  groupBy: string[]
  lengthsJoin: string
}): string {
  const inner = [...s.dimensions, 'f.app_id AS app_id', 'f.session_uuid AS session_uuid', ...s.states]
  const outer = [...s.groupBy.map((d) => `g.${d} AS ${d}`), ...s.metrics]
  return `SELECT ${outer.join(',\n  ')}
FROM (
  SELECT ${inner.join(',\n    ')}
  ${s.inner}
  GROUP BY ${[...s.groupBy, 'app_id', 'session_uuid'].join(', ')}
) AS g
  ${s.lengthsJoin}`
}

/**
 * The profiles metric: live profiles of one profile db, counted whole, or per attribute key
 * (profile_attribute_key) and value (profile_value_string: strings as they are, other values as
 * their JSON text).
 */
function compileProfiles(q: ParsedQuery, ctx: QueryContext): CompiledQuery {
  const params = new Params()
  const db = params.bind('UInt64', ctx.profiledbId)
  // Per attribute key when a profile dimension is asked or filtered on; else one row per profile.
  const perKey = q.dimensions.length > 0 || q.conditions.some((c) => c.target.kind === 'dimension')
  const valueOf = (d: Dimension) =>
    d.kind === 'profile_attribute_key'
      ? 'k'
      : `if(JSONType(p.attributes, k) = 'String', JSONExtractString(p.attributes, k), JSONExtractRaw(p.attributes, k))`
  const select: string[] = []
  const columns: CompiledQuery['columns'] = []
  const aliasOf = new Map<string, string>()
  q.dimensions.forEach((d, i) => {
    const alias = `d${i}`
    const grouping = q.conditions.find(
      (c) => c.op === 'in_groups' && c.target.kind === 'dimension' && c.name === d.name,
    )
    const value = valueOf(d.dimension)
    select.push(
      `CAST(${grouping ? groupValue(params, grouping, value) : value} AS Nullable(String)) AS ${alias}`,
    )
    aliasOf.set(d.name, alias)
    columns.push({ alias, name: d.name, metric: false })
  })
  const metric = q.metrics[0]!
  select.push(`${perKey ? 'uniqExact(p.customer_id)' : 'count()'} AS m0`)
  aliasOf.set(metric.name, 'm0')
  columns.push({ alias: 'm0', name: metric.name, metric: true })
  const where: string[] = []
  const having: string[] = []
  for (const c of q.conditions) {
    if (c.target.kind === 'metric') having.push(conditionSql(params, c, 'm0', true))
    else where.push(conditionSql(params, c, valueOf(c.target.dimension), false))
  }
  const groupBy = q.dimensions.map((_, i) => `d${i}`)
  const sql = `SELECT ${select.join(',\n  ')}
FROM (SELECT customer_id, attributes FROM profiles FINAL WHERE profiledb_id = ${db} AND deleted = 0) AS p
${perKey ? 'ARRAY JOIN JSONExtractKeys(p.attributes) AS k' : ''}
${where.length > 0 ? `WHERE ${where.map((w) => `(${w})`).join(' AND ')}` : ''}
${groupBy.length > 0 ? `GROUP BY ${groupBy.join(', ')}` : ''}
${having.length > 0 ? `HAVING ${having.map((h) => `(${h})`).join(' AND ')}` : ''}
${orderSql(q, aliasOf)}
LIMIT ${params.bind('UInt32', q.limit + 1)}`
  return { sql, params: params.values, columns, readsSessions: false, source: 'raw', estimated: [] }
}

/** Operands as strings, for echoing. */
export const operandText = (o: Operand) => (o === null ? null : String(o))
