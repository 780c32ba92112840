import { isSpecialKey, PROFILE_LIMITS } from '../../schemas/profiles.ts'
import { EMAIL } from '../profiles/attribute-rules.ts'
import type { CsvColumn, CsvHeader } from './profile-rows.ts'
import { DELETE_CELL, SET_SEPARATOR } from './profile-rows.ts'

/**
 * CSV lines typed by the engine (pure): the columns a plain line is staged under in `import_raw`
 * (migration 032), the customer_id cell the processor places it by, and the INSERT … SELECT that
 * types a round of staged lines into `import_rows` by the PATCH rules (profile-rows.ts).
 *
 * The engine types what it can type for certain and leaves the rest: a row is typed only when
 * every cell is empty, `\N`, or a value the SQL below proves valid and types exactly as
 * profile-rows.ts would (a string whose ends are visible ASCII and that fits 255 bytes, an integer
 * of up to 15 digits, a calendar date the engine reads back unchanged, a set of such strings or of
 * canonical integers, an e-mail the same pattern accepts). Any other row (a cell over a limit or
 * near one, a date-time, a date that names no day, a mixed set, a row changing nothing) is not
 * staged by the engine, and the processor types it in JavaScript, which gives a rejected row its
 * reason. Being conservative costs only speed: the JavaScript rules stay the one definition.
 */

/** import_raw's columns as the processor writes them (RowBinary). */
export const RAW_COLUMNS = [
  ['import_id', 'String'],
  ['round', 'UInt64'],
  ['block', 'UInt32'],
  ['line', 'UInt64'],
  ['raw', 'String'],
] as const

const COMMA = 0x2c

/**
 * The customer_id cell of a plain line (no quote: its cells are its text split at commas), or
 * undefined when the line has another number of cells than the header: such a line is typed in
 * JavaScript, which says why it is rejected.
 */
export function plainLineCustomer(bytes: Buffer, header: CsvHeader): string | undefined {
  const want = header.columns.length
  let cells = 1
  let customerStart = header.customerIndex === 0 ? 0 : -1
  let customerEnd = -1
  let at = bytes.indexOf(COMMA)
  while (at >= 0) {
    if (cells === header.customerIndex + 1) customerEnd = at
    cells++
    if (cells > want) return undefined
    if (cells === header.customerIndex + 1) customerStart = at + 1
    at = bytes.indexOf(COMMA, at + 1)
  }
  if (cells !== want) return undefined
  if (customerEnd < 0) customerEnd = bytes.length
  return bytes.toString('utf8', customerStart, customerEnd)
}

export interface TypingStatement {
  sql: string
  /** Besides `import` and `round`: the attribute names, their JSON keys, the fixed texts. */
  params: Record<string, string>
}

/**
 * The INSERT … SELECT typing the staged lines of one round (`{import:String}`, `{round:UInt64}`)
 * into import_rows, for lines under `header`. Column names and keys travel as parameters; the SQL
 * is built only from column positions and the fixed per-type expressions below.
 */
export function typingStatement(header: CsvHeader): TypingStatement {
  const params: Record<string, string> = {
    delete_cell: DELETE_CELL,
    edge_space: EDGE_SPACE,
    email_pattern: EMAIL.source,
    set_separator: SET_SEPARATOR,
  }
  const cellExprs: string[] = []
  const pairs: string[] = []
  const types: string[] = []
  const deletes: string[] = []
  const kinds: string[] = []
  let email = `''`
  for (const [index, column] of header.columns.entries()) {
    if (!column) continue
    const i = kinds.length
    params[`a${i}`] = column.attr
    params[`k${i}`] = JSON.stringify(column.attr)
    const v = `v${i}`
    const typed = cellTyping(column, v)
    cellExprs.push(
      `cells[${index + 1}] AS ${v}`,
      `multiIf(${v} = '', 0, ${v} = {delete_cell:String}, 1, ${typed.certain}, 2, 3) AS kind${i}`,
    )
    kinds.push(`kind${i}`)
    pairs.push(`if(kind${i} = 2, concat({k${i}:String}, ':', ${typed.json}), '')`)
    types.push(`{a${i}:String}, if(kind${i} = 2, ${typed.type}, '')`)
    deletes.push(`if(kind${i} = 1, {a${i}:String}, '')`)
    if (column.attr === '$email') email = `if(kind${i} = 2, lower(${v}), '')`
  }
  const all = kinds.join(', ')
  // greatest() of one argument is that argument, but the function wants two or more.
  const most = kinds.length === 1 ? kinds[0]! : `greatest(${all})`
  const sql = `
INSERT INTO import_rows (import_id, round, block, line, customer_id, updates, update_types, deletes, email)
SELECT import_id, round, block, line, customer_id, updates, update_types, deletes, email
FROM (
  SELECT import_id, round, block, line, cells[${header.customerIndex + 1}] AS customer_id,
    ${cellExprs.join(',\n    ')},
    ${most} AS most,
    concat('{', arrayStringConcat(arrayFilter(x -> x != '', [${pairs.join(', ')}]), ','), '}') AS updates,
    mapFilter((k, t) -> t != '', map(${types.join(', ')})) AS update_types,
    arrayFilter(x -> x != '', [${deletes.join(', ')}]) AS deletes,
    ${email} AS email
  FROM (
    SELECT import_id, round, block, line, splitByChar(',', raw) AS cells
    FROM import_raw FINAL WHERE import_id = {import:String} AND round = {round:UInt64}
  )
)
WHERE most BETWEEN 1 AND 2`
  return { sql, params }
}

const MAX_BYTES = PROFILE_LIMITS.stringMaxChars

/**
 * A string the PATCH rules keep as it is: at most 255 bytes (so at most 255 characters), not
 * empty, and nothing String.prototype.trim removes at either end: the edge bytes are visible
 * ASCII, or (a character beyond ASCII at an edge) the pattern of JavaScript's white space finds
 * none there. Control characters at an edge are left to JavaScript.
 */
const plain = (v: string) => {
  const first = `reinterpretAsUInt8(substring(${v}, 1, 1))`
  const last = `reinterpretAsUInt8(substring(${v}, length(${v}), 1))`
  return (
    `(length(${v}) BETWEEN 1 AND ${MAX_BYTES} AND (${first} BETWEEN 33 AND 126 OR ${first} >= 128) ` +
    `AND (${last} BETWEEN 33 AND 126 OR ${last} >= 128) ` +
    `AND ((${first} < 128 AND ${last} < 128) OR NOT match(${v}, {edge_space:String})))`
  )
}

/**
 * JavaScript's white space and line terminators (what trim removes) at the start or the end, as
 * RE2 reads it (code points, the engine's strings being UTF-8).
 */
const TRIMMED = '[\\t\\n\\x0B\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}]'
const EDGE_SPACE = `^${TRIMMED}|${TRIMMED}$`

/** profile-rows.ts's integer text (checked on the trimmed cell: a plain cell is its own trim). */
const integerLooking = (v: string) => `match(${v}, '^[+-]?[0-9]+([.][0-9]+)?$')`
/**
 * Integers whose value the SQL finds exactly as Number() and Math.trunc do: up to 15 digits (below
 * 2^53), or up to 9 with up to 6 decimals (never rounded up to the next integer as a double).
 */
const integerCertain = (v: string) =>
  `(match(${v}, '^[+-]?[0-9]{1,15}$') OR match(${v}, '^[+-]?[0-9]{1,9}[.][0-9]{1,6}$'))`
/** Truncated toward zero; -0 is 0 as for the PATCH. */
const integerJson = (v: string) =>
  `toString(if(startsWith(${v}, '-'), -1, 1) * toInt64OrZero(extract(${v}, '[0-9]+')))`
/** attribute-rules.ts's ISO 8601 pattern begins so: anything else is not a date. */
const dateLooking = (v: string) => `match(${v}, '^[0-9]{4}-[0-9]{2}-[0-9]{2}')`
/** A calendar date alone that names a real day (the engine reads it back unchanged). */
const dateCertain = (v: string) =>
  `(match(${v}, '^[0-9]{4}-[0-9]{2}-[0-9]{2}$') AND toString(toDate32OrZero(${v})) = ${v})`
const dateJson = (v: string) => `concat('"', ${v}, '"')`

function cellTyping(column: CsvColumn, v: string): { certain: string; json: string; type: string } {
  if (isSpecialKey(column.attr)) {
    // One string each whatever the column's type; $email one address of the PATCH's pattern
    // (which has one @: at most 64 characters before it, at most 254 in all).
    const address =
      column.attr === '$email'
        ? ` AND length(${v}) <= 254 AND position(${v}, '@') BETWEEN 2 AND 65 AND match(${v}, {email_pattern:String})`
        : ''
    return { certain: `${plain(v)}${address}`, json: `toJSONString(${v})`, type: `'string'` }
  }
  switch (column.type) {
    case 'string':
      return { certain: plain(v), json: `toJSONString(${v})`, type: `'string'` }
    case 'integer':
      return { certain: integerCertain(v), json: integerJson(v), type: `'integer'` }
    case 'date':
      return { certain: dateCertain(v), json: dateJson(v), type: `'date'` }
    case 'auto':
      return {
        certain: `multiIf(NOT ${plain(v)}, 0, ${integerLooking(v)}, ${integerCertain(v)}, ${dateLooking(v)}, ${dateCertain(v)}, 1)`,
        json: `multiIf(${integerLooking(v)}, ${integerJson(v)}, ${dateLooking(v)}, ${dateJson(v)}, toJSONString(${v}))`,
        type: `multiIf(${integerLooking(v)}, 'integer', ${dateLooking(v)}, 'date', 'string')`,
      }
    case 'set': {
      // Items of plain strings; all canonical integers (a set of numbers) or none integer-looking
      // (a set of strings); duplicates dropped, first kept. A JSON array cell is JavaScript's.
      const items = `splitByChar({set_separator:String}, ${v})`
      const canonical = `arrayAll(x -> match(x, '^(0|[1-9][0-9]{0,14})$'), ${items})`
      return {
        certain:
          `(${plain(v)} AND NOT startsWith(${v}, '[') AND arrayAll(x -> ${plain('x')}, ${items}) ` +
          `AND (${canonical} OR NOT arrayExists(x -> match(x, '^[+-]?[0-9]+$'), ${items})))`,
        json: `if(${canonical}, concat('[', arrayStringConcat(arrayDistinct(${items}), ','), ']'), toJSONString(arrayDistinct(${items})))`,
        type: `'set'`,
      }
    }
  }
}
