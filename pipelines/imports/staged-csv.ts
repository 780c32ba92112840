import { isSpecialKey, PROFILE_LIMITS } from '../../schemas/profiles.ts'
import type { InsertSelect } from '../connectors/store/store.ts'
import { EMAIL } from '../profiles/attribute-rules.ts'
import type { CsvColumn, CsvHeader } from './profile-rows.ts'
import { STAGED_ROW_COLUMNS } from './import-blocks.ts'
import { DELETE_CELL, SET_SEPARATOR } from './profile-rows.ts'

/**
 * CSV lines typed by the engine (pure): the columns a round's plain lines are handed to the engine
 * under, the customer_id cell the processor places a line by, and the SELECT that types the lines,
 * as the engine reads them, into `import_rows` by the PATCH rules (profile-rows.ts): one insert
 * per round, the lines read once, with no table in between.
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

/** A round's plain lines as the processor hands them to the engine (RowBinary): `raw` is the line. */
export const RAW_COLUMNS = [
  ['import_id', 'String'],
  ['round', 'UInt64'],
  ['block', 'UInt32'],
  ['line', 'UInt64'],
  ['raw', 'String'],
] as const

/** import_rows' columns the typing fills: a staged row's, in the same order. */
const TYPED_COLUMNS = STAGED_ROW_COLUMNS

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

/**
 * The SELECT typing plain lines under `header` (RAW_COLUMNS, read as the insert's rows) into
 * import_rows: store.insert('import_rows', lines, { rowBinary: RAW_COLUMNS, select }). Column names
 * and keys travel as parameters (the attribute names, their JSON keys, the fixed texts); the SQL
 * is built only from column positions and the fixed per-type expressions below.
 *
 * In layers, each reading the columns of the one below (a cell, then its facts, then its kind,
 * JSON and type, then the row's): an alias used twice in one SELECT is its whole expression twice
 * in the query tree, and a single layer of 20 columns took the engine over a second to plan and
 * ran each regular expression several times per cell.
 */
export function typingStatement(header: CsvHeader): InsertSelect {
  const params: Record<string, string> = {
    delete_cell: DELETE_CELL,
    edge_space: EDGE_SPACE,
    email_pattern: EMAIL.source,
    set_separator: SET_SEPARATOR,
  }
  const cells: string[] = [`cells[${header.customerIndex + 1}] AS customer_id`]
  const cellFacts: string[] = []
  const typed: string[] = []
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
    const c = cellTyping(column, i, index)
    cells.push(`cells[${index + 1}] AS v${i}`, ...c.cells)
    cellFacts.push(...c.facts)
    typed.push(
      `multiIf(v${i} = '', 0, v${i} = {delete_cell:String}, 1, ${c.certain}, 2, 3) AS kind${i}`,
      `${c.json} AS json${i}`,
      `${c.type} AS type${i}`,
    )
    kinds.push(`kind${i}`)
    pairs.push(`if(kind${i} = 2, concat({k${i}:String}, ':', json${i}), '')`)
    types.push(`{a${i}:String}, if(kind${i} = 2, type${i}, '')`)
    deletes.push(`if(kind${i} = 1, {a${i}:String}, '')`)
    if (column.attr === '$email') email = `if(kind${i} = 2, lower(v${i}), '')`
  }
  // greatest() of one argument is that argument, but the function wants two or more.
  const most = kinds.length === 1 ? kinds[0]! : `greatest(${kinds.join(', ')})`
  const list = (items: string[]) => items.map((x) => `,\n        ${x}`).join('')
  const sql = (rows: string) => `
SELECT ${TYPED_COLUMNS.join(', ')}
FROM (
  SELECT import_id, round, block, line, customer_id, ${most} AS most,
    concat('{', arrayStringConcat(arrayFilter(x -> x != '', [${pairs.join(', ')}]), ','), '}') AS updates,
    mapFilter((k, t) -> t != '', map(${types.join(', ')})) AS update_types,
    arrayFilter(x -> x != '', [${deletes.join(', ')}]) AS deletes,
    ${email} AS email
  FROM (
    SELECT *${list(typed)}
    FROM (
      SELECT *${list(cellFacts)}
      FROM (
        SELECT import_id, round, block, line${list(cells)}
        FROM (
          SELECT import_id, round, block, line, splitByChar(',', raw) AS cells
          FROM ${rows}
        )
      )
    )
  )
)
WHERE most BETWEEN 1 AND 2`
  return { columns: TYPED_COLUMNS, sql, params }
}

const MAX_BYTES = PROFILE_LIMITS.stringMaxChars

/**
 * JavaScript's white space and line terminators (what trim removes) at the start or the end, as
 * RE2 reads it (code points, the engine's strings being UTF-8). Run only on a cell with a byte
 * beyond ASCII at an edge.
 */
const TRIMMED =
  '[\\t\\n\\x0B\\f\\r \\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}\\x{FEFF}]'
const EDGE_SPACE = `^${TRIMMED}|${TRIMMED}$`

/**
 * The typing is made of byte tests and round trips through the engine's own parsers, not of
 * regular expressions (a regular expression per cell made typing cost several times the engine's
 * whole CSV insert):
 *
 * - plain: a string the PATCH rules keep as it is: 1..255 bytes (so at most 255 characters), and
 *   nothing String.prototype.trim removes at either end: the edge bytes are visible ASCII, or (a
 *   byte beyond ASCII at an edge) the pattern of JavaScript's white space finds none there;
 * - an integer: the engine's Int64 written back is the cell, of at most 15 digits (below 2^53,
 *   as Number() reads it); `007`, `+5`, `-0` and decimals are JavaScript's;
 * - a date: 10 bytes that the engine's Date32 written back is (`YYYY-MM-DD`, a real day);
 * - a cell of an untyped column starting with anything but a digit or a sign is no integer and no
 *   date for profile-rows.ts either (its integer text and ISO 8601 date begin so): a string.
 */
const facts = (i: number) => [
  `reinterpretAsUInt8(v${i}) AS first${i}`,
  `reinterpretAsUInt8(substring(v${i}, -1)) AS last${i}`,
  `length(v${i}) AS bytes${i}`,
]
const integerFact = (i: number) =>
  `bytes${i} - (first${i} = 45) <= 15 AND toString(toInt64OrZero(v${i})) = v${i} AS int${i}`
const dateFact = (i: number) => `bytes${i} = 10 AND toString(toDate32OrZero(v${i})) = v${i} AS date${i}`
const numeric = (byte: string) => `(${byte} BETWEEN 48 AND 57 OR ${byte} IN (43, 45))`
const plain = (i: number) =>
  `(bytes${i} BETWEEN 1 AND ${MAX_BYTES} AND (first${i} BETWEEN 33 AND 126 OR first${i} >= 128) ` +
  `AND (last${i} BETWEEN 33 AND 126 OR last${i} >= 128) ` +
  `AND ((first${i} < 128 AND last${i} < 128) OR NOT match(v${i}, {edge_space:String})))`
/** A set item kept as it is: 1..255 bytes, visible ASCII at both ends. */
const plainItem = (x: string) =>
  `(length(${x}) BETWEEN 1 AND ${MAX_BYTES} AND reinterpretAsUInt8(${x}) BETWEEN 33 AND 126 ` +
  `AND reinterpretAsUInt8(substring(${x}, -1)) BETWEEN 33 AND 126)`

interface CellTyping {
  /** Columns beside the cell `v<i>` (its set items). */
  cells: string[]
  /** Facts of the cell, computed once each. */
  facts: string[]
  /** Over the cell and its facts: typed for certain; the value's JSON; its type. */
  certain: string
  json: string
  type: string
}

/** Column `i` of the attributes, cell `index` of the line. */
function cellTyping(column: CsvColumn, i: number, index: number): CellTyping {
  const v = `v${i}`
  if (isSpecialKey(column.attr)) {
    // One string each whatever the column's type; $email one address of the PATCH's pattern
    // (which has one @: at most 64 characters before it, at most 254 in all).
    const address =
      column.attr === '$email'
        ? ` AND bytes${i} <= 254 AND position(${v}, '@') BETWEEN 2 AND 65 AND match(${v}, {email_pattern:String})`
        : ''
    return {
      cells: [],
      facts: facts(i),
      certain: `${plain(i)}${address}`,
      json: `toJSONString(${v})`,
      type: `'string'`,
    }
  }
  switch (column.type) {
    case 'string':
      return { cells: [], facts: facts(i), certain: plain(i), json: `toJSONString(${v})`, type: `'string'` }
    case 'integer':
      return {
        cells: [],
        facts: [...facts(i), integerFact(i)],
        certain: `int${i}`,
        json: v,
        type: `'integer'`,
      }
    case 'date':
      return {
        cells: [],
        facts: [...facts(i), dateFact(i)],
        certain: `date${i}`,
        json: `concat('"', ${v}, '"')`,
        type: `'date'`,
      }
    case 'auto':
      return {
        cells: [],
        facts: [...facts(i), integerFact(i), dateFact(i)],
        certain: `multiIf(NOT ${plain(i)}, 0, NOT ${numeric(`first${i}`)}, 1, int${i} OR date${i}, 1, 0)`,
        json: `multiIf(int${i}, ${v}, date${i}, concat('"', ${v}, '"'), toJSONString(${v}))`,
        type: `multiIf(int${i}, 'integer', date${i}, 'date', 'string')`,
      }
    case 'set': {
      // Items all integers written plainly (a set of numbers), or all plain strings of which none
      // begins with a digit or a sign (a set of strings); duplicates dropped, the first kept. A
      // JSON array cell, or any other, is JavaScript's.
      const items = `items${i}`
      return {
        cells: [`splitByChar({set_separator:String}, cells[${index + 1}]) AS ${items}`],
        facts: [
          ...facts(i),
          `arrayAll(x -> length(x) <= 15 AND toString(toUInt64OrZero(x)) = x, ${items}) AS numbers${i}`,
          `arrayAll(x -> ${plainItem('x')} AND NOT ${numeric('reinterpretAsUInt8(x)')}, ${items}) AS words${i}`,
        ],
        certain: `${plain(i)} AND first${i} != 91 AND (numbers${i} OR words${i})`,
        json: `if(numbers${i}, concat('[', arrayStringConcat(arrayDistinct(${items}), ','), ']'), toJSONString(arrayDistinct(${items})))`,
        type: `'set'`,
      }
    }
  }
}
