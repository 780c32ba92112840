import { dimensionOf, isProfileDimension, metricOf, type Dimension, type Metric } from './query-fields.ts'
import { nameList, ParamsError, type RawParams, type RawValue } from './query-params.ts'

/**
 * A Query API request's parameters (query-params.ts) to a checked query: every name known, every
 * condition well formed, or a QueryError naming the part that is not. Pure.
 */

export const MAX_LIMIT = 50_000
export const MAX_DAYS = 3660

export type Operand = string | number | null

export type ConditionOp = 'in' | 'not_in' | 'between' | '==' | '!=' | '<' | '<=' | '>' | '>=' | 'in_groups'
const OPERATORS: readonly string[] = [
  'in',
  'not_in',
  'between',
  '==',
  '!=',
  '<',
  '<=',
  '>',
  '>=',
  'in_groups',
]

export interface Condition {
  /** The name as the client wrote it. */
  name: string
  target: { kind: 'dimension'; dimension: Dimension } | { kind: 'metric'; metric: Metric }
  /** A scalar is `==`. */
  op: ConditionOp
  operands: Operand[]
  /** in_groups: group name → members, in the order given. */
  groups?: [string, Operand[]][]
}

export interface NamedDimension {
  name: string
  dimension: Dimension
}
export interface NamedMetric {
  name: string
  metric: Metric
}

export interface ParsedQuery {
  appIds: string[]
  metrics: NamedMetric[]
  dimensions: NamedDimension[]
  conditions: Condition[]
  order: { name: string; descending: boolean }[]
  limit: number
  /** The last `days` days, today included (in the app's time zone); undefined: no window. */
  days: number | undefined
  comment: string | undefined
  translate: boolean
  profiledbId: number | undefined
}

/** A part of the query that is wrong: answered 400 with this message. */
export class QueryError extends Error {
  override name = 'QueryError'
}

const string = (v: RawValue | undefined, what: string): string | undefined => {
  if (v === undefined || v === null || v === '') return undefined
  if (Array.isArray(v)) {
    if (v.length === 1) return string(v[0], what)
    throw new QueryError(`${what} must be given once`)
  }
  if (typeof v === 'object') throw new QueryError(`${what} must be a single value`)
  return String(v)
}

function integer(v: RawValue | undefined, what: string, min: number, max: number): number | undefined {
  const text = string(v, what)
  if (text === undefined) return undefined
  if (!/^\s*-?\d+\s*$/.test(text)) throw new QueryError(`${what} must be an integer from ${min} to ${max}`)
  const n = Number(text)
  if (n < min || n > max) throw new QueryError(`${what} must be an integer from ${min} to ${max}`)
  return n
}

function names(v: RawValue | undefined, what: string): string[] {
  try {
    return nameList(v, what)
  } catch (err) {
    if (err instanceof ParamsError) throw new QueryError(err.message)
    throw err
  }
}

/** The app ids a request names: `app_id`, `app_ids` (lists like the names), and the path's app. */
function appIdsOf(params: RawParams, pathAppId: string | undefined): string[] {
  const ids = [...names(params.app_id, 'app_id'), ...names(params.app_ids, 'app_ids')]
  if (pathAppId !== undefined) ids.unshift(pathAppId)
  const unique = [...new Set(ids)]
  if (unique.length === 0) throw new QueryError('app_id is required')
  if (unique.length > 100) throw new QueryError('app_ids: at most 100 apps')
  return unique
}

function parseConditions(
  raw: RawValue | undefined,
  dimensions: NamedDimension[],
  metrics: NamedMetric[],
): Condition[] {
  if (raw === undefined || raw === null || raw === '') return []
  let value: unknown = raw
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw)
    } catch {
      throw new QueryError('conditions is not valid JSON')
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new QueryError('conditions must be a JSON object from names to conditions')
  return Object.entries(value as Record<string, unknown>).map(([name, spec]) =>
    parseCondition(name, spec, dimensions, metrics),
  )
}

function operand(v: unknown, name: string): Operand {
  if (v === null || typeof v === 'string') return v
  if (typeof v === 'number' && Number.isFinite(v)) return v
  if (typeof v === 'boolean') return String(v)
  throw new QueryError(`conditions.${name}: operands must be strings, numbers or null`)
}

function parseCondition(
  name: string,
  spec: unknown,
  dimensions: NamedDimension[],
  metrics: NamedMetric[],
): Condition {
  const metric = metricOf(name)
  const dimension = metric ? undefined : dimensionOf(name)
  if (!metric && !dimension) throw new QueryError(`conditions: unknown metric or dimension '${name}'`)
  if (metric && !metrics.some((m) => m.name === name))
    throw new QueryError(`conditions.${name}: a condition on a metric needs that metric in metrics`)
  const target = metric
    ? { kind: 'metric' as const, metric }
    : { kind: 'dimension' as const, dimension: dimension! }
  if (target.kind === 'dimension' && isProfileDimension(target.dimension) !== isProfileQuery(metrics))
    throw new QueryError(`conditions.${name}: profile dimensions go only with the profiles metric`)
  if (!Array.isArray(spec)) return { name, target, op: '==', operands: [operand(spec, name)] }
  const [op, ...rest] = spec as unknown[]
  if (typeof op !== 'string' || !OPERATORS.includes(op))
    throw new QueryError(`conditions.${name}: unknown operator ${JSON.stringify(op)}`)
  if (op === 'in_groups') {
    if (target.kind !== 'dimension') throw new QueryError(`conditions.${name}: in_groups is for dimensions`)
    const groupsSpec = rest[0]
    if (
      rest.length !== 1 ||
      typeof groupsSpec !== 'object' ||
      groupsSpec === null ||
      Array.isArray(groupsSpec)
    )
      throw new QueryError(`conditions.${name}: in_groups takes one object from group names to lists`)
    const groups = Object.entries(groupsSpec as Record<string, unknown>).map(([group, members]) => {
      if (!Array.isArray(members) || members.length === 0)
        throw new QueryError(`conditions.${name}: in_groups group '${group}' must be a non-empty list`)
      return [group, members.map((m) => operand(m, name))] as [string, Operand[]]
    })
    if (groups.length === 0) throw new QueryError(`conditions.${name}: in_groups needs at least one group`)
    return { name, target, op, operands: [], groups }
  }
  // Rails brackets give `in` members one by one; a JSON body may give them as one list.
  const operands = (rest.length === 1 && Array.isArray(rest[0]) ? (rest[0] as unknown[]) : rest).map((v) =>
    operand(v, name),
  )
  const arity = op === 'between' ? 2 : op === 'in' || op === 'not_in' ? undefined : 1
  if (arity !== undefined && operands.length !== arity)
    throw new QueryError(
      `conditions.${name}: ${op} takes ${arity === 2 ? 'two operands' : 'one operand'}, got ${operands.length}`,
    )
  if (operands.length === 0) throw new QueryError(`conditions.${name}: ${op} needs at least one member`)
  const ordered = op === 'between' || op === '<' || op === '<=' || op === '>' || op === '>='
  if (ordered && operands.some((o) => o === null))
    throw new QueryError(`conditions.${name}: ${op} cannot compare with null`)
  if (target.kind === 'metric' && operands.some((o) => o !== null && !isNumeric(o)))
    throw new QueryError(`conditions.${name}: a metric compares with numbers`)
  if (target.kind === 'dimension') checkTimeOperands(name, target.dimension, operands)
  return { name, target, op: op as ConditionOp, operands }
}

export const isNumeric = (v: Operand): boolean =>
  typeof v === 'number' || (typeof v === 'string' && /^\s*-?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?\s*$/.test(v))

const DATE = /^\d{4}-\d{2}-\d{2}$/
const MONTH = /^\d{4}-\d{2}$/
const HOUR = /^\d{4}-\d{2}-\d{2} \d{2}:00$/

function checkTimeOperands(name: string, d: Dimension, operands: Operand[]): void {
  const shape =
    d.kind === 'birth_day' || (d.kind === 'time' && (d.unit === 'day' || d.unit === 'week'))
      ? { re: DATE, text: 'YYYY-MM-DD' }
      : d.kind === 'time' && d.unit === 'month'
        ? { re: MONTH, text: 'YYYY-MM' }
        : d.kind === 'time'
          ? { re: HOUR, text: 'YYYY-MM-DD HH:00' }
          : undefined
  if (!shape) return
  for (const o of operands) {
    if (o === null) continue
    const ok = typeof o === 'string' && shape.re.test(o) && validDate(o)
    if (!ok) throw new QueryError(`conditions.${name}: ${JSON.stringify(o)} is not a ${shape.text} value`)
  }
}

function validDate(text: string): boolean {
  const [y, m, d] = [
    Number(text.slice(0, 4)),
    Number(text.slice(5, 7)),
    text.length >= 10 ? Number(text.slice(8, 10)) : 1,
  ]
  const date = new Date(Date.UTC(y, m - 1, d))
  return date.getUTCFullYear() === y && date.getUTCMonth() === m - 1 && date.getUTCDate() === d
}

const isProfileQuery = (metrics: NamedMetric[]) =>
  metrics.some((m) => m.metric.kind === 'simple' && m.metric.metric === 'profiles')

function parseOrder(raw: RawValue | undefined, known: Set<string>): ParsedQuery['order'] {
  const entries = names(raw, 'order')
  return entries.map((entry) => {
    const sign = entry[0]
    const descending = sign === '-'
    const name = sign === '-' || sign === '+' ? entry.slice(1).trim() : entry
    if (!known.has(name))
      throw new QueryError(`order: '${name}' is not one of the query's metrics or dimensions`)
    return { name, descending }
  })
}

function truthy(v: RawValue | undefined): boolean {
  const text = string(v, 'translate')
  return text !== undefined && !['0', 'false', 'no', 'off'].includes(text.toLowerCase())
}

/**
 * The checked query. `pathAppId`: the app of `/v1/apps/:app_id/query`, queried with any others the
 * parameters name.
 */
export function parseQuery(params: RawParams, pathAppId?: string): ParsedQuery {
  const appIds = appIdsOf(params, pathAppId)
  const metricNames = names(params.metrics, 'metrics')
  if (metricNames.length === 0) throw new QueryError('metrics: at least one metric is required')
  const metrics = metricNames.map((name) => {
    const metric = metricOf(name)
    if (!metric) throw new QueryError(`metrics: unknown metric '${name}'`)
    return { name, metric }
  })
  const profile = isProfileQuery(metrics)
  if (profile && metrics.length > 1)
    throw new QueryError('metrics: profiles cannot be combined with other metrics')
  const dimensions = names(params.dimensions, 'dimensions').map((name) => {
    const dimension = dimensionOf(name)
    if (!dimension) throw new QueryError(`dimensions: unknown dimension '${name}'`)
    if (isProfileDimension(dimension) !== profile)
      throw new QueryError(
        profile
          ? `dimensions: '${name}' cannot be used with the profiles metric`
          : `dimensions: '${name}' goes only with the profiles metric`,
      )
    return { name, dimension }
  })
  const all = [...metrics.map((m) => m.name), ...dimensions.map((d) => d.name)]
  const duplicate = all.find((n, i) => all.indexOf(n) !== i)
  if (duplicate !== undefined) throw new QueryError(`'${duplicate}' is asked for twice`)
  const conditions = parseConditions(params.conditions, dimensions, metrics)
  const order = parseOrder(params.order, new Set(all))
  const limit = integer(params.limit, 'limit', 1, MAX_LIMIT) ?? MAX_LIMIT
  const days = integer(params.days, 'days', 1, MAX_DAYS)
  const profiledbId = integer(
    params.profiledb_id ?? params.profile_db_id ?? params.profile_database_id,
    'profiledb_id',
    1,
    Number.MAX_SAFE_INTEGER,
  )
  const comment = string(params.comment, 'comment')
  if (comment !== undefined && comment.length > 10_000)
    throw new QueryError('comment: at most 10,000 characters')
  return {
    appIds,
    metrics,
    dimensions,
    conditions,
    order,
    limit,
    days,
    comment,
    translate: truthy(params.translate),
    profiledbId,
  }
}
