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
 * import_rows: store.insert('import_rows', lines, { rowBinary: RAW_COLUMNS, select }). The header
 * travels as parameters (the customer_id's cell; each attribute's typing kind, name and JSON key,
 * as arrays in the order of the cells around it); the SQL text is the same for every header.
 *
 * The cells of a line are one array, typed by lambdas over it with the column's kind beside each
 * cell: the engine plans one expression per step whatever the number of columns. Written out per
 * column (an expression for each cell's facts, kind, JSON and type), a 20-column header made a
 * query the engine took ~0.7 s of CPU to plan, three quarters of a round's typing; as arrays, one
 * line takes ~0.05 s and 20,000 lines ~0.17 s. A lambda must not capture the line's cells (each
 * use copies them once per element): the attributes' cells are the slices around the customer_id. In layers, each reading the arrays of the one below (the
 * cells, then their facts, then their kind, JSON and type, then the row's): an alias used twice in
 * one SELECT is its whole expression twice in the query tree.
 */
export function typingStatement(header: CsvHeader): InsertSelect {
  const kinds: TypingKind[] = []
  const attrs: string[] = []
  const keys: string[] = []
  for (const [index, column] of header.columns.entries()) {
    // Every cell but the customer_id is an attribute's: the SQL takes the cells around it.
    if (!column) {
      if (index !== header.customerIndex) throw new Error(`column ${index + 1} names no attribute`)
      continue
    }
    kinds.push(typingKind(column))
    attrs.push(column.attr)
    keys.push(JSON.stringify(column.attr))
  }
  const email = kinds.indexOf('email') + 1
  const params = {
    customer: header.customerIndex + 1,
    kinds,
    attrs,
    keys,
    email,
    delete_cell: DELETE_CELL,
    edge_space: EDGE_SPACE,
    email_pattern: EMAIL.source,
    set_separator: SET_SEPARATOR,
  }
  const K = '{kinds:Array(String)}'
  const sql = (rows: string) => `
SELECT ${STAGED_ROW_COLUMNS.join(', ')}
FROM (
  SELECT import_id, round, block, line, customer_id, arrayMax(kind) AS most,
    concat('{', arrayStringConcat(arrayFilter(x -> x != '',
      arrayMap((k, j, c) -> if(c = 2, concat(k, ':', j), ''), {keys:Array(String)}, json, kind)), ','), '}') AS updates,
    mapFilter((k, t) -> t != '',
      mapFromArrays({attrs:Array(String)}, arrayMap((c, t) -> if(c = 2, t, ''), kind, type))) AS update_types,
    arrayFilter(x -> x != '', arrayMap((a, c) -> if(c = 1, a, ''), {attrs:Array(String)}, kind)) AS deletes,
    if({email:UInt32} > 0 AND kind[{email:UInt32}] = 2, lower(v[{email:UInt32}]), '') AS email
  FROM (
    SELECT *,
      arrayMap((x, k, f, b, p, i, d, n, w) -> multiIf(x = '', 0, x = {delete_cell:String}, 1, ${CERTAIN}, 2, 3),
        v, ${K}, first, bytes, plain, int, date, numbers, words) AS kind,
      arrayMap((x, k, i, d, s, n) -> ${JSON_TEXT}, v, ${K}, int, date, items, numbers) AS json,
      arrayMap((k, i, d) -> ${TYPE}, ${K}, int, date) AS type
    FROM (
      SELECT *,
        arrayMap((x, f, l, b) -> ${PLAIN}, v, first, last, bytes) AS plain,
        arrayMap((x, k, f, b) -> k IN ('integer', 'auto') AND ${INTEGER}, v, ${K}, first, bytes) AS int,
        arrayMap((x, k, b) -> k IN ('date', 'auto') AND ${DATE}, v, ${K}, bytes) AS date,
        arrayMap(s -> arrayAll(y -> ${SET_NUMBER}, s), items) AS numbers,
        arrayMap(s -> arrayAll(y -> ${SET_WORD}, s), items) AS words
      FROM (
        SELECT *,
          arrayMap(x -> reinterpretAsUInt8(x), v) AS first,
          arrayMap(x -> reinterpretAsUInt8(substring(x, -1)), v) AS last,
          arrayMap(x -> length(x), v) AS bytes,
          arrayMap((x, k) -> if(k = 'set', splitByChar({set_separator:String}, x), []), v, ${K}) AS items
        FROM (
          SELECT import_id, round, block, line, cells[{customer:UInt32}] AS customer_id,
            arrayConcat(arraySlice(cells, 1, {customer:UInt32} - 1), arraySlice(cells, {customer:UInt32} + 1)) AS v
          FROM (
            SELECT import_id, round, block, line, splitByChar(',', raw) AS cells
            FROM ${rows}
          )
        )
      )
    )
  )
)
WHERE most BETWEEN 1 AND 2`
  return { columns: STAGED_ROW_COLUMNS, sql, params }
}

/**
 * Settings of the typing insert: the lines read in blocks of 8,192 rows. The arrays a block's
 * cells make (the cells, their facts, their JSON) are held at once; a round of 20,000 lines in one
 * block took the typing's SELECT over 32 MB, in blocks of 4,096 under it, for ~30 % more CPU. The
 * insert still writes one part a round (blocks are squashed up to `min_insert_block_size_rows`).
 */
export const TYPING_SETTINGS = { max_block_size: 8192 }

/**
 * How a column's cells are typed: `email` ($email: one address), `special` (other `$` names: one
 * string each whatever the column's type), else the column's type (`auto` when the header gives
 * none).
 */
type TypingKind = 'email' | 'special' | CsvColumn['type']

function typingKind(column: CsvColumn): TypingKind {
  if (column.attr === '$email') return 'email'
  if (isSpecialKey(column.attr)) return 'special'
  return column.type
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
 * whole CSV insert). Lambda bodies over a cell `x`, its kind `k`, first and last bytes `f`, `l`,
 * its length in bytes `b`, and the facts below (`p` plain, `i` integer, `d` date, `s` set items,
 * `n` all items integers, `w` all items words):
 *
 * - plain: a string the PATCH rules keep as it is: 1..255 bytes (so at most 255 characters), and
 *   nothing String.prototype.trim removes at either end: the edge bytes are visible ASCII, or (a
 *   byte beyond ASCII at an edge) the pattern of JavaScript's white space finds none there;
 * - an integer: the engine's Int64 written back is the cell, of at most 15 digits (below 2^53,
 *   as Number() reads it); `007`, `+5`, `-0` and decimals are JavaScript's;
 * - a date: 10 bytes that the engine's Date32 written back is (`YYYY-MM-DD`, a real day);
 * - a cell of an untyped column starting with anything but a digit or a sign is no integer and no
 *   date for profile-rows.ts either (its integer text and ISO 8601 date begin so): a string;
 * - a set: items all integers written plainly (a set of numbers), or all plain strings of which
 *   none begins with a digit or a sign (a set of strings); duplicates dropped, the first kept. A
 *   JSON array cell, or any other, is JavaScript's;
 * - $email: one address of the PATCH's pattern (which has one @: at most 64 characters before it,
 *   at most 254 in all).
 */
const numeric = (byte: string) => `(${byte} BETWEEN 48 AND 57 OR ${byte} IN (43, 45))`
const PLAIN =
  `(b BETWEEN 1 AND ${MAX_BYTES} AND (f BETWEEN 33 AND 126 OR f >= 128) AND (l BETWEEN 33 AND 126 OR l >= 128) ` +
  `AND ((f < 128 AND l < 128) OR NOT match(x, {edge_space:String})))`
const INTEGER = `b - (f = 45) <= 15 AND toString(toInt64OrZero(x)) = x`
const DATE = `b = 10 AND toString(toDate32OrZero(x)) = x`
const SET_NUMBER = `length(y) <= 15 AND toString(toUInt64OrZero(y)) = y`
const SET_WORD =
  `length(y) BETWEEN 1 AND ${MAX_BYTES} AND reinterpretAsUInt8(y) BETWEEN 33 AND 126 ` +
  `AND reinterpretAsUInt8(substring(y, -1)) BETWEEN 33 AND 126 AND NOT ${numeric('reinterpretAsUInt8(y)')}`
const CERTAIN = `multiIf(
          k IN ('string', 'special'), p,
          k = 'email', p AND b <= 254 AND position(x, '@') BETWEEN 2 AND 65 AND match(x, {email_pattern:String}),
          k = 'integer', i,
          k = 'date', d,
          k = 'auto', p AND (NOT ${numeric('f')} OR i OR d),
          k = 'set', p AND f != 91 AND (n OR w),
          0)`
const JSON_TEXT = `multiIf(
          k = 'integer' OR (k = 'auto' AND i), x,
          k = 'date' OR (k = 'auto' AND d), concat('"', x, '"'),
          k = 'set', if(n, concat('[', arrayStringConcat(arrayDistinct(s), ','), ']'), toJSONString(arrayDistinct(s))),
          toJSONString(x))`
const TYPE = `multiIf(k IN ('string', 'special', 'email'), 'string', k != 'auto', k, i, 'integer', d, 'date', 'string')`
