import type { Session } from 'chdb'
import type { ChdbStore } from './chdb-store.ts'
import { parseJsonEachRow } from './rows.ts'
import type { QueryParams } from './store.ts'

/**
 * A chdb connection of its own for long reads (an audience count over a million installs), so they
 * run beside the pipelines' queries instead of before or after them: chdb runs every *bound* query
 * of the process one after another (chdb-store.ts), so a bound count of a second would hold up
 * every look-up of the control applier, the writers and the edge meanwhile. Here the query's
 * parameters are set with one `SET param_<name> = '<text>', …` on this connection, in the text form
 * ClickHouse's HTTP interface takes them (`param_<name>=<text>`), and the query, whose values are
 * still only `{name:Type}` placeholders, runs unbound, on its own libuv thread. Calls on the
 * connection run one at a time, in order. A parameter stays set on the connection until a later
 * query sets it again: each query sets every parameter it uses.
 */
export class ChdbSideConnection {
  private tail: Promise<unknown> = Promise.resolve()

  private constructor(private readonly session: Session) {}

  static async open(store: ChdbStore, connectionArgs: readonly string[] = []): Promise<ChdbSideConnection> {
    const session = store.connect(connectionArgs)
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(store.database))
      throw new Error(`invalid database ${store.database}`)
    await session.queryAsync(`USE ${store.database}`, { format: 'TabSeparated' })
    return new ChdbSideConnection(session)
  }

  query<T = Record<string, unknown>>(sql: string, params: QueryParams = {}): Promise<T[]> {
    const run = this.tail.then(async () => {
      const assignments = Object.entries(params).map(([name, value]) => {
        if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new Error(`invalid query parameter name ${name}`)
        return `param_${name} = ${sqlStringLiteral(paramText(value))}`
      })
      // One call for the parameters and the query, and one SET for all the parameters: each call
      // costs the engine a round of its own (about 1 ms, a tenth of a small query), and each
      // statement of a call about 0.25 ms (docs/query-api.md, "Measured").
      const statements = assignments.length > 0 ? [`SET ${assignments.join(', ')}`, sql] : [sql]
      const result = await this.session.queryAsync(statements.join(';\n'), { format: 'JSONEachRow' })
      return parseJsonEachRow<T>(result.text())
    })
    this.tail = run.catch(() => undefined)
    return run
  }

  async close(): Promise<void> {
    await this.tail
    this.session.close()
  }
}

/**
 * A parameter value in the text form the engine parses per the placeholder's type (as
 * @clickhouse/client formats `param_<name>`): a string with its tab, newline, carriage return,
 * NUL, quote and backslash escaped; a number as written; an array as `[…]` of quoted elements.
 */
export function paramText(value: unknown, inArray = false): string {
  if (typeof value === 'number' || typeof value === 'bigint') {
    if (typeof value === 'number' && !Number.isFinite(value))
      throw new Error(`parameter ${value} is not finite`)
    return String(value)
  }
  if (typeof value === 'boolean') return inArray ? (value ? 'TRUE' : 'FALSE') : value ? '1' : '0'
  if (typeof value === 'string') {
    const escaped = value.replace(/[\t\n\r\0'\\]/g, (c) => ESCAPES[c]!)
    return inArray ? `'${escaped}'` : escaped
  }
  if (Array.isArray(value)) return `[${value.map((v) => paramText(v, true)).join(',')}]`
  throw new Error(`unsupported query parameter value ${typeof value}`)
}

const ESCAPES: Record<string, string> = {
  '\t': '\\t',
  '\n': '\\n',
  '\r': '\\r',
  '\0': '\\0',
  "'": "\\'",
  '\\': '\\\\',
}

/** A SQL string literal the engine reads back as `text`. */
function sqlStringLiteral(text: string): string {
  return `'${text.replace(/[\\']/g, (c) => `\\${c}`)}'`
}
