/**
 * The names a query may use, as the Query API spells them, and what each means: the metrics and
 * dimensions docs/query-api.md lists. Pure: a name in, a field (or undefined) out.
 */

export type TimeUnit = 'day' | 'week' | 'month' | 'hour'

/** Device and event columns of `events` a dimension reads directly (and of `sessions`, where it has them). */
export const COLUMN_DIMENSIONS = {
  event_name: 'event_name',
  country: 'country',
  language: 'language',
  app_version: 'app_version',
  os_version: 'os_version',
  platform: 'platform',
  device_model: 'model',
  source: 'source',
} as const
export type ColumnDimension = keyof typeof COLUMN_DIMENSIONS

/** Columns `sessions` also has: a dimension on any other one restricts a query to events. */
export const SESSION_COLUMNS: ReadonlySet<string> = new Set([
  'country',
  'app_version',
  'os_version',
  'platform',
  'source',
])

export type Dimension =
  | { kind: 'time'; unit: TimeUnit }
  | { kind: 'birth_day' }
  | { kind: 'new_device' }
  | { kind: 'column'; column: (typeof COLUMN_DIMENSIONS)[ColumnDimension] }
  /** An event attribute (`a:` string, `n:` number; both read the stored text). */
  | { kind: 'attribute'; key: string }
  | { kind: 'profile_attribute_key' }
  | { kind: 'profile_value_string' }

export const SIMPLE_METRICS = [
  'users',
  'occurrences',
  'sessions',
  'average_session_length',
  'sessions_per_event',
  'new_users',
  'ltv',
  'profiles',
] as const
export type SimpleMetric = (typeof SIMPLE_METRICS)[number]
export type AttributeAggregate = 'avg' | 'sum' | 'min' | 'max'

export type Metric =
  { kind: 'simple'; metric: SimpleMetric } | { kind: 'aggregate'; fn: AttributeAggregate; key: string }

const TIME_UNITS: readonly string[] = ['day', 'week', 'month', 'hour']
const AGGREGATE = /^(avg|sum|min|max)\(\s*([an]):(.+?)\s*\)$/
const CUSTOM = /^custom_(\d|1\d)$/

export function dimensionOf(name: string): Dimension | undefined {
  if (TIME_UNITS.includes(name)) return { kind: 'time', unit: name as TimeUnit }
  if (name === 'birth_day') return { kind: 'birth_day' }
  if (name === 'new_device') return { kind: 'new_device' }
  if (name === 'profile_attribute_key') return { kind: 'profile_attribute_key' }
  if (name === 'profile_value_string') return { kind: 'profile_value_string' }
  if (Object.hasOwn(COLUMN_DIMENSIONS, name))
    return { kind: 'column', column: COLUMN_DIMENSIONS[name as ColumnDimension] }
  const attr = /^[an]:(.+)$/s.exec(name)
  if (attr?.[1]) return { kind: 'attribute', key: attr[1] }
  // Custom dimensions travel with the events as the attributes custom_0 … custom_19.
  if (CUSTOM.test(name)) return { kind: 'attribute', key: name }
  return undefined
}

export function metricOf(name: string): Metric | undefined {
  if ((SIMPLE_METRICS as readonly string[]).includes(name))
    return { kind: 'simple', metric: name as SimpleMetric }
  const agg = AGGREGATE.exec(name)
  if (agg?.[1] && agg[3]) return { kind: 'aggregate', fn: agg[1] as AttributeAggregate, key: agg[3] }
  return undefined
}

/** Whether a dimension reads something only events have (a session row has no such value). */
export function eventOnlyDimension(d: Dimension): boolean {
  return d.kind === 'attribute' || (d.kind === 'column' && !SESSION_COLUMNS.has(d.column))
}

export const isProfileDimension = (d: Dimension) =>
  d.kind === 'profile_attribute_key' || d.kind === 'profile_value_string'
