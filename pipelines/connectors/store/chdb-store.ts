import { mkdirSync } from 'node:fs'
import { Session } from 'chdb'
import type { InsertOptions, QueryParams, RawExecutor, Store } from './store.ts'
import { insertSettings, parseJsonEachRow, toJsonEachRow } from './rows.ts'

/**
 * Store adapter over chdb: ClickHouse in this process. The engine runs one query at a time
 * (chdb serialises calls on a session) off the event loop. Settings are always applied per
 * query (a SETTINGS clause), never with SET, because SET would stick to the shared session.
 */
export class ChdbStore implements Store, RawExecutor {
  readonly kind = 'chdb' as const
  readonly database: string
  private readonly session: Session

  private constructor(session: Session, database: string) {
    this.session = session
    this.database = database
  }

  static async open(path: string, database = 'sluice'): Promise<ChdbStore> {
    mkdirSync(path, { recursive: true })
    const store = new ChdbStore(new Session(path), database)
    // The session's current database is sticky, which is what every later unqualified name needs.
    await store.session.queryAsync(`CREATE DATABASE IF NOT EXISTS ${database}; USE ${database}`)
    return store
  }

  async command(sql: string, params?: QueryParams): Promise<void> {
    await this.run(sql, params, 'TSV')
  }

  async query<T = Record<string, unknown>>(sql: string, params?: QueryParams): Promise<T[]> {
    const result = await this.run(sql, params, 'JSONEachRow')
    return parseJsonEachRow<T>(result.text())
  }

  async insert(table: string, rows: readonly object[] | Buffer, options: InsertOptions = {}): Promise<void> {
    const values = Buffer.isBuffer(rows) ? rows : toJsonEachRow(rows)
    if (values.length === 0) return
    await this.session.insert({ table, values, format: 'JSONEachRow', settings: insertSettings(options) })
  }

  async exec(
    sql: string,
    options: { params?: QueryParams; format?: string; body?: Buffer },
  ): Promise<Buffer> {
    const text = options.body && options.body.length > 0 ? `${sql}\n${options.body.toString('utf8')}` : sql
    const result = await this.run(text, options.params, options.format ?? 'TabSeparated')
    return Buffer.from(result.bytes())
  }

  async ping(): Promise<boolean> {
    try {
      await this.session.queryAsync('SELECT 1')
      return true
    } catch {
      return false
    }
  }

  async close(): Promise<void> {
    this.session.close()
  }

  private run(sql: string, params: QueryParams | undefined, format: string) {
    return params && Object.keys(params).length > 0
      ? this.session.queryBindAsync(sql, params, { format })
      : this.session.queryAsync(sql, { format })
  }
}
