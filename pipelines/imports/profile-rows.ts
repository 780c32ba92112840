import { charsAtMost } from '../../schemas/events.ts'
import { isSpecialKey, PROFILE_LIMITS, type ProfileValue } from '../../schemas/profiles.ts'
import {
  checkInteger,
  checkKey,
  checkSet,
  checkSpecialValue,
  checkString,
  checkValue,
  parseIsoDate,
  type Checked,
} from '../profiles/attribute-rules.ts'
import { validatePatch, type NormalizedChange, type ProfileScope } from '../profiles/validate-changes.ts'

/**
 * The rows of a profile import (pure): a CSV header → its columns, a CSV row or a JSON line → one
 * customer's changes, typed by the PATCH rules (validate-changes.ts, attribute-rules.ts). A row
 * applies whole or not at all: one invalid cell or item rejects the row, with the reason.
 */

export const CELL_TYPES = ['auto', 'string', 'integer', 'date', 'set'] as const
export type CellType = (typeof CELL_TYPES)[number]

export interface CsvColumn {
  attr: string
  type: CellType
}

export interface CsvHeader {
  /** Index of the customer_id column. */
  customerIndex: number
  /** The other columns, by index (undefined at the customer_id column). */
  columns: (CsvColumn | undefined)[]
}

export const CUSTOMER_COLUMN = 'customer_id'
/** The cell that deletes an attribute (as ClickHouse writes NULL in CSV); an empty cell changes nothing. */
export const DELETE_CELL = '\\N'
/** Separates the values of a set cell (a cell starting with `[` is a JSON array instead). */
export const SET_SEPARATOR = '|'

export type RowResult =
  | { ok: true; customer: string; changes: NormalizedChange[] }
  | { ok: false; customer: string | undefined; reason: string }

/** The header row: a customer_id column, and attribute columns `name` or `name:type`. */
export function parseCsvHeader(cells: readonly string[], scope: ProfileScope): Checked<CsvHeader> {
  const columns: (CsvColumn | undefined)[] = []
  let customerIndex = -1
  const seen = new Set<string>()
  for (const [i, raw] of cells.entries()) {
    const cell = raw.trim()
    if (cell === CUSTOMER_COLUMN) {
      if (customerIndex >= 0) return no('the header names customer_id twice')
      customerIndex = i
      columns.push(undefined)
      continue
    }
    const colon = cell.lastIndexOf(':')
    const suffix = colon > 0 ? cell.slice(colon + 1) : ''
    const typed = (CELL_TYPES as readonly string[]).includes(suffix)
    const key = checkKey(typed ? cell.slice(0, colon) : cell)
    if (!key.ok) return no(`header column ${i + 1} (${JSON.stringify(cell.slice(0, 140))}): ${key.reason}`)
    if (scope === 'app' && isSpecialKey(key.value))
      return no(`header column ${i + 1}: ${key.value} can only be imported into org-level profiles`)
    if (seen.has(key.value)) return no(`the header names ${key.value} twice`)
    seen.add(key.value)
    columns.push({ attr: key.value, type: typed ? (suffix as CellType) : 'auto' })
  }
  if (customerIndex < 0) return no('the header has no customer_id column')
  if (columns.length < 2) return no('the header names no attribute column')
  return { ok: true, value: { customerIndex, columns } }
}

/** One CSV record under its header. */
export function csvRow(header: CsvHeader, cells: readonly string[]): RowResult {
  const customer = cells[header.customerIndex]
  if (cells.length !== header.columns.length)
    return reject(customer, `the row has ${cells.length} cells; the header has ${header.columns.length}`)
  const id = checkCustomer(customer)
  if (!id.ok) return reject(customer, id.reason)
  const changes: NormalizedChange[] = []
  for (const [index, column] of header.columns.entries()) {
    const cell = cells[index]
    if (!column || cell === undefined || cell === '') continue
    if (cell === DELETE_CELL) {
      changes.push({ index, op: 'delete', attr: column.attr })
      continue
    }
    const value = typedCell(column, cell)
    if (!value.ok) return reject(id.value, `${column.attr}: ${value.reason}`)
    changes.push({ index, op: 'assign', attr: column.attr, value: value.value })
  }
  if (changes.length === 0) return reject(id.value, 'the row changes no attribute (every cell is empty)')
  return { ok: true, customer: id.value, changes }
}

const INTEGER_TEXT = /^[+-]?[0-9]+(\.[0-9]+)?$/

function typedCell(column: CsvColumn, cell: string): Checked<ProfileValue> {
  if (isSpecialKey(column.attr)) return checkSpecialValue(column.attr, cell)
  switch (column.type) {
    case 'auto':
      // As a PATCH types JSON: a number is an integer (decimals truncated), a date-shaped string a date.
      return INTEGER_TEXT.test(cell.trim()) ? integerCell(cell) : checkValue(cell)
    case 'string': {
      const s = checkString(cell)
      return s.ok ? { ok: true, value: { type: 'string', value: s.value } } : s
    }
    case 'integer':
      return INTEGER_TEXT.test(cell.trim()) ? integerCell(cell) : no(`not an integer: ${quote(cell)}`)
    case 'date': {
      const date = parseIsoDate(cell.trim())
      return typeof date === 'string'
        ? { ok: true, value: { type: 'date', value: date } }
        : no(`not a valid ISO 8601 date: ${quote(cell)}`)
    }
    case 'set': {
      const items = setItems(cell)
      if (!items.ok) return items
      const set = checkSet(items.value)
      return set.ok ? { ok: true, value: { type: 'set', value: set.value } } : set
    }
  }
}

function integerCell(cell: string): Checked<ProfileValue> {
  const n = checkInteger(Number(cell.trim()))
  return n.ok ? { ok: true, value: { type: 'integer', value: n.value } } : n
}

/** `a|b|3` (integer-looking items are integers) or a JSON array. */
function setItems(cell: string): Checked<unknown[]> {
  const text = cell.trim()
  if (text.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(text)
      if (Array.isArray(parsed)) return { ok: true, value: parsed }
    } catch {
      // reported below
    }
    return no(`a set cell starting with [ must be a JSON array: ${quote(cell)}`)
  }
  return {
    ok: true,
    value: text.split(SET_SEPARATOR).map((item) => (/^[+-]?[0-9]+$/.test(item.trim()) ? Number(item) : item)),
  }
}

/**
 * One JSON line: `{"customer_id", "attributes"}` or `{"customer_id", "changes"}`, the PATCH
 * syntaxes. An item the PATCH would ignore rejects the row here.
 */
export function jsonRow(text: string, scope: ProfileScope): RowResult {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return reject(undefined, 'the line is not JSON')
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return reject(undefined, 'the line must be a JSON object')
  const { customer_id: customer, ...rest } = value as Record<string, unknown>
  const shown = typeof customer === 'string' ? customer : undefined
  const id = checkCustomer(customer)
  if (!id.ok) return reject(shown, id.reason)
  const patch = validatePatch(rest, scope)
  if (patch.kind === 'malformed') return reject(id.value, patch.reason.replace('request body', 'the line'))
  if (patch.ignored.length > 0) {
    const first = patch.ignored[0]!
    const more = patch.ignored.length > 1 ? ` (and ${patch.ignored.length - 1} more)` : ''
    return reject(id.value, `${first.attr ?? `item ${first.index}`}: ${first.reason}${more}`)
  }
  if (patch.kind === 'none-valid') return reject(id.value, 'the line changes no attribute')
  return { ok: true, customer: id.value, changes: patch.changes }
}

/** A customer_id as a row must give it: a string, 1..128 characters. */
export function checkCustomer(raw: unknown): Checked<string> {
  if (raw === undefined) return no('customer_id is missing')
  if (typeof raw !== 'string') return no('customer_id must be a string')
  if (raw === '') return no('customer_id is empty')
  if (!charsAtMost(raw, PROFILE_LIMITS.customerIdMaxChars))
    return no(`customer_id is longer than ${PROFILE_LIMITS.customerIdMaxChars} characters`)
  return { ok: true, value: raw }
}

const reject = (customer: unknown, reason: string): RowResult => ({
  ok: false,
  customer: typeof customer === 'string' ? customer : undefined,
  reason,
})
const no = <T>(reason: string): Checked<T> => ({ ok: false, reason })
const quote = (s: string) => JSON.stringify(s.length > 64 ? `${s.slice(0, 64)}…` : s)
