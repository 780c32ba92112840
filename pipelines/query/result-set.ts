import type { CompiledQuery } from './compile-query.ts'
import type { ParsedQuery } from './parse-query.ts'

/** The Query API's answer (docs/query-api.md, "The answer"), built from the engine's rows. Pure. */

export type ResultRow = Record<string, string | number | null>

/**
 * Rows keyed by the names exactly as requested: metrics as numbers (the engine's 64-bit integers
 * arrive as text), dimension values as strings or null. At most `limit` rows; `truncated` when the
 * engine had more (it is asked for one more).
 */
export function resultRows(
  rows: Record<string, unknown>[],
  columns: CompiledQuery['columns'],
  limit: number,
): { results: ResultRow[]; truncated: boolean } {
  const results = rows.slice(0, limit).map((row) => {
    const out: ResultRow = {}
    for (const column of columns) {
      const value = row[column.alias]
      out[column.name] = column.metric ? metricValue(value) : dimensionValue(value)
    }
    return out
  })
  return { results, truncated: rows.length > limit }
}

/** The compiler casts every dimension to Nullable(String): a string or null. */
function dimensionValue(value: unknown): string | null {
  return typeof value === 'string' ? value : typeof value === 'number' ? String(value) : null
}

function metricValue(value: unknown): number | null {
  if (value === null || value === undefined) return null
  const n = typeof value === 'number' ? value : Number(value)
  return Number.isFinite(n) ? n : null
}

/** The query as understood: what the Go library reads back as `query`. */
export function queryEcho(
  q: ParsedQuery,
  timeZone: string,
  profiledbId: number | undefined,
  compiled: Pick<CompiledQuery, 'estimated' | 'source'>,
) {
  return {
    app_ids: q.appIds,
    metrics: q.metrics.map((m) => m.name),
    dimensions: q.dimensions.map((d) => d.name),
    conditions: Object.fromEntries(
      q.conditions.map((c) => [
        c.name,
        c.op === 'in_groups' ? ['in_groups', Object.fromEntries(c.groups ?? [])] : [c.op, ...c.operands],
      ]),
    ),
    order: q.order.map((o) => `${o.descending ? '-' : '+'}${o.name}`),
    limit: q.limit,
    days: q.days ?? null,
    comment: q.comment ?? null,
    translate: q.translate,
    time_zone: timeZone,
    ...(profiledbId !== undefined && { profiledb_id: profiledbId }),
    // The metrics read from the rollup's uniq states (docs/query-api.md, "Rollups and estimates").
    estimated: compiled.estimated,
    source: compiled.source,
  }
}

/** RFC 4180 CSV: a header of the requested names, then one line per row; null is an empty field. */
export function resultCsv(names: readonly string[], results: readonly ResultRow[]): string {
  const field = (v: string | number | null) => {
    if (v === null) return ''
    const text = String(v)
    return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text
  }
  const lines = [
    names.map(field).join(','),
    ...results.map((r) => names.map((n) => field(r[n] ?? null)).join(',')),
  ]
  return `${lines.join('\r\n')}\r\n`
}
