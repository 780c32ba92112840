import { Readable } from 'node:stream'
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import type { InsertOptions, QueryParams, Store } from './store.ts'
import { insertSettings } from './rows.ts'

export interface ClickHouseStoreOptions {
  url: string
  username: string
  password: string
  database: string
}

/** Store adapter over a ClickHouse server (HTTP), for distributed mode. */
export class ClickHouseStore implements Store {
  readonly kind = 'clickhouse' as const
  readonly database: string
  private readonly client: ClickHouseClient

  private constructor(client: ClickHouseClient, database: string) {
    this.client = client
    this.database = database
  }

  /** Connects and creates the database when missing. */
  static async open(options: ClickHouseStoreOptions): Promise<ClickHouseStore> {
    const bootstrap = createClient({
      url: options.url,
      username: options.username,
      password: options.password,
    })
    try {
      await bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS ${options.database}` })
    } finally {
      await bootstrap.close()
    }
    const client = createClient({
      url: options.url,
      username: options.username,
      password: options.password,
      database: options.database,
      request_timeout: 60_000,
      max_open_connections: 16,
    })
    return new ClickHouseStore(client, options.database)
  }

  async command(sql: string, params?: QueryParams): Promise<void> {
    await this.client.command({ query: sql, query_params: params })
  }

  async query<T = Record<string, unknown>>(sql: string, params?: QueryParams): Promise<T[]> {
    const result = await this.client.query({ query: sql, format: 'JSONEachRow', query_params: params })
    return result.json<T>()
  }

  async insert(table: string, rows: readonly object[] | Buffer, options: InsertOptions = {}): Promise<void> {
    const settings = insertSettings(options)
    if (Buffer.isBuffer(rows)) {
      if (rows.length === 0) return
      await this.client.insert({
        table,
        values: Readable.from([rows]),
        format: 'JSONEachRow',
        clickhouse_settings: settings,
      })
      return
    }
    if (rows.length === 0) return
    await this.client.insert({
      table,
      values: rows as object[],
      format: 'JSONEachRow',
      clickhouse_settings: settings,
    })
  }

  async ping(): Promise<boolean> {
    const result = await this.client.ping()
    return result.success
  }

  async close(): Promise<void> {
    await this.client.close()
  }
}
