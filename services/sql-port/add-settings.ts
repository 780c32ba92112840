/**
 * Adds query-level settings to a statement: one SETTINGS clause where ClickHouse takes it, merged with
 * the statement's own. Pure: no I/O.
 */
import { isValidSettingName, type SettingEntry } from './settings-clause.ts'
import { quoteString } from '../../pipelines/text/sql-escapes.ts'
import { isWhitespace } from '../../pipelines/text/sql-tokenizer.ts'
import { analyzeStatement, type StatementAnalysis } from './statement-analysis.ts'

export type SettingValue = string | number | boolean

/** A setting value as a SQL literal: numbers bare, booleans as 0/1, strings quoted and escaped. */
function renderSettingValue(value: SettingValue): string {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`setting value ${value} is not a finite number`)
    return String(value)
  }
  if (typeof value === 'boolean') return value ? '1' : '0'
  return quoteString(value)
}

export interface AddSettings {
  /** Applied first: the statement's own SETTINGS override these (URL settings in ClickHouse). */
  defaults?: Record<string, SettingValue>
  /** Applied last, in this order: they override the statement's own settings. */
  overrides?: Record<string, SettingValue>
}

/**
 * Returns `sql` with one query-level SETTINGS clause holding `defaults`, the statement's own top-level
 * settings and `overrides`, each name once, overrides last. Placed where ClickHouse accepts it: before
 * FORMAT for queries, after the table (and column list) for INSERT. Throws on multi-statement text and
 * on names that are not plain identifiers.
 */
export function addSettings(sql: string, add: AddSettings, analysis = analyzeStatement(sql)): string {
  if (analysis.multiStatement) throw new Error('cannot add settings to more than one statement')
  if (analysis.kind === '') return sql
  const overrides = Object.entries(add.overrides ?? {})
  const defaults = Object.entries(add.defaults ?? {})
  for (const [name] of [...defaults, ...overrides]) {
    if (!isValidSettingName(name)) throw new Error(`invalid setting name: ${JSON.stringify(name)}`)
  }
  const own = effectiveEntries(analysis)
  if (overrides.length === 0 && defaults.length === 0) return sql

  const merged = new Map<string, string>()
  const put = (name: string, value: string) => {
    merged.delete(name)
    merged.set(name, value)
  }
  const ownNames = new Set(own.map((e) => e.name))
  const overrideNames = new Set(overrides.map(([name]) => name))
  for (const [name, value] of defaults) {
    if (!ownNames.has(name) && !overrideNames.has(name)) put(name, renderSettingValue(value))
  }
  for (const entry of own) {
    if (!overrideNames.has(entry.name)) put(entry.name, entry.value)
  }
  for (const [name, value] of overrides) put(name, renderSettingValue(value))

  const clause = `SETTINGS ${[...merged].map(([name, value]) => `${renderName(name)} = ${value}`).join(', ')}`
  if (analysis.kind === 'INSERT') {
    return `${sql.slice(0, analysis.settingsAt)} ${clause}${leadingSpace(sql.slice(analysis.keepFrom))}`
  }
  const format = analysis.format ? ` FORMAT ${analysis.format.nameText}` : ''
  return `${sql.slice(0, analysis.settingsAt)} ${clause}${format}`
}

function renderName(name: string): string {
  return isValidSettingName(name) ? name : `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``
}

function leadingSpace(rest: string): string {
  return rest === '' || isWhitespace(rest.charAt(0)) ? rest : ` ${rest}`
}

/** The statement's own query-level settings, in the order the engine applies them (last wins). */
function effectiveEntries(analysis: StatementAnalysis): SettingEntry[] {
  // A clause after FORMAT is applied before the one in front of it, so the front one wins.
  const [pre, post] = analysis.settings
  return [...(post?.entries ?? []), ...(pre?.entries ?? [])]
}
