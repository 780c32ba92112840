import { wellFormed } from '../../text/unicode.ts'
import type { InsertSelect } from './store.ts'

/**
 * Serialise rows as JSONEachRow, the one insert format both engines parse natively. The last
 * guard of "every string bound for the engine is valid UTF-8": JSON.stringify writes a lone
 * surrogate as a `\udXXX` escape, which the engine refuses (Code 25) on every retry, so such a row
 * is written again with its strings made well formed. Well-formed pairs are never escaped, so
 * the check costs one scan of rows that have an escape at all.
 */
export function toJsonEachRow(rows: readonly object[]): Buffer {
  let out = ''
  for (const row of rows) {
    let line = JSON.stringify(row)
    if (line.includes('\\ud') && LONE_SURROGATE_ESCAPE.test(line))
      line = JSON.stringify(row, wellFormedStrings)
    out += line + '\n'
  }
  return Buffer.from(out)
}

// An escape of a surrogate code unit; `\\ud800` (an escaped backslash, then text) matches too,
// which only costs a needless second stringify.
const LONE_SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/

function wellFormedStrings(this: unknown, key: string, value: unknown): unknown {
  if (typeof value === 'string') return wellFormed(value)
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return value
  // Member names are not passed through a replacer: rename the ill-formed ones here.
  let renamed = false
  for (const name in value) if (!name.isWellFormed()) renamed = true
  if (!renamed) return value
  const out: Record<string, unknown> = {}
  for (const [name, v] of Object.entries(value)) out[wellFormed(name)] = v
  return out
}

export function parseJsonEachRow<T>(text: string): T[] {
  const rows: T[] = []
  let start = 0
  while (start < text.length) {
    let end = text.indexOf('\n', start)
    if (end === -1) end = text.length
    if (end > start) rows.push(JSON.parse(text.slice(start, end)) as T)
    start = end + 1
  }
  return rows
}

export function insertSettings(
  options: { dedupToken?: string; settings?: Record<string, string | number> } = {},
) {
  const settings: Record<string, string | number> = { ...options.settings }
  if (options.dedupToken !== undefined) settings.insert_deduplication_token = options.dedupToken
  return settings
}

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_.]*$/
// Types as the pipeline names them: letters, digits, parentheses, commas, spaces and quoted words.
const COLUMN_TYPE = /^[A-Za-z0-9_(), ']+$/

/**
 * `name Type, …` for a RowBinary insert's columns, checked: names and types are the pipeline's own
 * constants, never user input, and this keeps it so.
 */
export function rowBinaryColumns(table: string, columns: readonly (readonly [string, string])[]) {
  if (!IDENTIFIER.test(table)) throw new Error(`invalid table name: ${table}`)
  for (const [name, type] of columns) {
    if (!IDENTIFIER.test(name)) throw new Error(`invalid column name: ${name}`)
    if (!COLUMN_TYPE.test(type)) throw new Error(`invalid column type: ${type}`)
  }
  return {
    names: columns.map(([name]) => name).join(', '),
    structure: columns.map(([name, type]) => `${name} ${type}`).join(', '),
  }
}

/**
 * `INSERT INTO table (columns)[ SETTINGS …] SELECT … FROM <rows>` of an insert through a SELECT
 * (InsertOptions.select), `rows` being the engine's way to read the insert's rows as a table.
 */
export function insertSelectStatement(
  table: string,
  select: InsertSelect,
  settings: Record<string, string | number>,
  rows: string,
): string {
  if (!IDENTIFIER.test(table)) throw new Error(`invalid table name: ${table}`)
  for (const name of select.columns) {
    if (!IDENTIFIER.test(name)) throw new Error(`invalid column name: ${name}`)
  }
  return `INSERT INTO ${table} (${select.columns.join(', ')})${settingsClause(settings)}\n${select.sql(rows)}`
}

/** A SETTINGS clause (` SETTINGS k = 'v', …`, or '') with values as escaped string literals. */
export function settingsClause(settings: Record<string, string | number>): string {
  const parts: string[] = []
  for (const [key, value] of Object.entries(settings)) {
    if (!IDENTIFIER.test(key)) throw new Error(`invalid setting name: ${key}`)
    parts.push(typeof value === 'number' ? `${key} = ${value}` : `${key} = ${stringLiteral(value)}`)
  }
  return parts.length > 0 ? ` SETTINGS ${parts.join(', ')}` : ''
}

/** A ClickHouse string literal. */
export const stringLiteral = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`
