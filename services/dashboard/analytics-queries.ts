/**
 * The Analytics page's questions, as Query API bodies (docs/query-api.md), and the charts drawn
 * from their answers. Pure: the page sends the bodies through `/v1/query` and shows each one so an
 * analyst can run it again.
 */

const DAY_MS = 86_400_000
const ISO_DAY = /^\d{4}-\d{2}-\d{2}$/
/** A year and a day: a daily chart of more is unreadable, and the query gets slow. */
export const MAX_RANGE_DAYS = 366
export const DEFAULT_RANGE_DAYS = 30

export interface DateRange {
  from: string
  to: string
}

/** The range asked for (`from`, `to` as YYYY-MM-DD), the last 30 days by default; errors by field. */
export function analyticsRange(
  asked: { from?: string | undefined; to?: string | undefined },
  now: number,
): { range: DateRange; errors: Record<string, string[]> } {
  const today = new Date(now).toISOString().slice(0, 10)
  const to = asked.to?.trim() || today
  const from = asked.from?.trim() || dayPlus(to, -(DEFAULT_RANGE_DAYS - 1)) || dayPlus(today, -29)!
  const errors: Record<string, string[]> = {}
  if (!validDay(from)) errors.from = ['from: a date, YYYY-MM-DD']
  if (!validDay(to)) errors.to = ['to: a date, YYYY-MM-DD']
  if (!errors.from && !errors.to) {
    if (from > to) errors.from = ['from: must not be after to']
    else if (daysBetween(from, to) + 1 > MAX_RANGE_DAYS)
      errors.from = [`from: at most ${MAX_RANGE_DAYS} days before to`]
  }
  return { range: { from, to }, errors }
}

export type ChartKind = 'daily' | 'bars'

export interface AnalyticsQuery {
  id: string
  title: string
  kind: ChartKind
  /** The dimension of the rows (the x axis). */
  dimension: string
  /** The metrics shown in the table; the first `drawn` of them are drawn. */
  metrics: string[]
  drawn: number
  body: Record<string, unknown>
}

/** The page's four questions over one app and range: each one Query API request. */
export function analyticsQueries(appId: string, range: DateRange): AnalyticsQuery[] {
  const conditions = { day: ['between', range.from, range.to] }
  const ranked = (id: string, title: string, dimension: string, metrics: string[], limit: number) => ({
    id,
    title,
    kind: 'bars' as const,
    dimension,
    metrics,
    drawn: 1,
    body: {
      app_ids: [appId],
      metrics,
      dimensions: [dimension],
      conditions,
      order: [`-${metrics[0]}`],
      limit,
    },
  })
  return [
    {
      id: 'daily',
      title: 'Users, sessions and occurrences by day',
      kind: 'daily',
      dimension: 'day',
      metrics: ['users', 'sessions', 'occurrences'],
      drawn: 3,
      body: {
        app_ids: [appId],
        metrics: ['users', 'sessions', 'occurrences'],
        dimensions: ['day'],
        conditions,
        limit: MAX_RANGE_DAYS,
      },
    },
    ranked('events', 'Top events', 'event_name', ['occurrences', 'users'], 10),
    ranked('countries', 'Users by country', 'country', ['users', 'sessions'], 15),
    ranked('versions', 'Users by app version', 'app_version', ['users', 'sessions'], 15),
  ]
}

/** What the browser script draws with uPlot (services/dashboard/assets/analytics.js). */
export interface ChartData {
  kind: ChartKind
  dimension: string
  /** Day charts: the days (YYYY-MM-DD); bar charts: the category labels. */
  labels: string[]
  series: { label: string; values: number[] }[]
}

type Row = Record<string, unknown>

/**
 * The rows of an answer as a chart and a table: a daily chart has every day of the range (a day
 * without data is 0, so a gap reads as one); a bar chart has the rows in the answer's order, a
 * missing value labelled "(none)".
 */
export function chartOf(query: AnalyticsQuery, rows: readonly Row[], range: DateRange): ChartData {
  const label = (r: Row) => (r[query.dimension] === null ? '(none)' : String(r[query.dimension]))
  const metric = (r: Row | undefined, m: string) => Number(r?.[m] ?? 0) || 0
  const drawn = query.metrics.slice(0, query.drawn)
  if (query.kind === 'daily') {
    const byDay = new Map(rows.map((r) => [label(r), r]))
    const labels = everyDay(range)
    return {
      kind: 'daily',
      dimension: query.dimension,
      labels,
      series: drawn.map((m) => ({ label: m, values: labels.map((d) => metric(byDay.get(d), m)) })),
    }
  }
  return {
    kind: 'bars',
    dimension: query.dimension,
    labels: rows.map(label),
    series: drawn.map((m) => ({ label: m, values: rows.map((r) => metric(r, m)) })),
  }
}

/** The same request as a command an analyst can paste (Basic auth from the environment). */
export function curlOf(origin: string, body: Record<string, unknown>): string {
  const json = JSON.stringify(body).replaceAll("'", "'\\''")
  return `curl -u "$API_KEY:$API_SECRET" -H 'Content-Type: application/json' -X POST '${origin}/v1/query' -d '${json}'`
}

function everyDay(range: DateRange): string[] {
  const days: string[] = []
  for (let d = range.from; d <= range.to && days.length < MAX_RANGE_DAYS; d = dayPlus(d, 1)!) days.push(d)
  return days
}

function validDay(day: string): boolean {
  if (!ISO_DAY.test(day)) return false
  const t = Date.parse(`${day}T00:00:00Z`)
  return !Number.isNaN(t) && new Date(t).toISOString().slice(0, 10) === day
}

function dayPlus(day: string, n: number): string | undefined {
  const t = Date.parse(`${day}T00:00:00Z`)
  return Number.isNaN(t) ? undefined : new Date(t + n * DAY_MS).toISOString().slice(0, 10)
}

const daysBetween = (from: string, to: string) =>
  Math.round((Date.parse(`${to}T00:00:00Z`) - Date.parse(`${from}T00:00:00Z`)) / DAY_MS)
