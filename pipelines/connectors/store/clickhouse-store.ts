import { Readable } from 'node:stream'
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import {
  isRowPieces,
  piecesColumns,
  type InsertOptions,
  type QueryParams,
  type RowPieces,
  type Store,
} from './store.ts'
import {
  insertSelectStatement,
  insertSettings,
  rowBinaryColumns,
  stringLiteral,
  toJsonEachRow,
} from './rows.ts'

const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_.]*$/
const FORMAT_NAME = /^[A-Za-z][A-Za-z0-9]*$/

export interface ClickHouseStoreOptions {
  url: string
  username: string
  password: string
  database: string
  /** The cluster's name (CLICKHOUSE_CLUSTER): the database is created on every node, and see CLUSTER_SETTINGS. */
  cluster?: string
}

/**
 * Settings of every request on a cluster, where tables are Distributed in front of replicated ones
 * (docs/scaling.md):
 * - an insert returns once every shard has its rows (not when a Distributed table has queued them
 *   on the node that took the insert), so a 2xx means stored, and a retry after an error carries
 *   the same deduplication token to the shards it already reached, which drop it;
 * - a block retried through a materialized view (events_ingest into events, events into
 *   event_uuid_index) is dropped in the view's target too, not only in the source;
 * - a subquery over a Distributed table inside a query over another (the writer's index repair,
 *   the audience compiler's IN subqueries) reads the whole subquery once and ships it to every
 *   shard, which is exact whatever the two tables' sharding keys; ClickHouse refuses such queries
 *   by default.
 */
export const CLUSTER_SETTINGS = {
  distributed_foreground_insert: 1,
  deduplicate_blocks_in_dependent_materialized_views: 1,
  distributed_product_mode: 'global',
} as const

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
      const onCluster = options.cluster ? ` ON CLUSTER ${options.cluster}` : ''
      await bootstrap.command({ query: `CREATE DATABASE IF NOT EXISTS ${options.database}${onCluster}` })
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
      ...(options.cluster ? { clickhouse_settings: CLUSTER_SETTINGS } : {}),
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

  /** A query with per-query settings (the caps of an analyst's read: capped-reads.ts). */
  async queryWithSettings<T = Record<string, unknown>>(
    sql: string,
    params: QueryParams,
    settings: Record<string, string | number>,
  ): Promise<T[]> {
    const result = await this.client.query({
      query: sql,
      format: 'JSONEachRow',
      query_params: params,
      clickhouse_settings: settings,
    })
    return result.json<T>()
  }

  /**
   * The server's own bytes of `format` over HTTP, read as the reader asks for them. The query is
   * aborted when the stream is destroyed before its end. An error the server meets after the
   * headers breaks the response, so the stream errors instead of ending cleanly.
   */
  queryStream(sql: string, params: QueryParams | undefined, format: string): Readable {
    if (!FORMAT_NAME.test(format)) throw new Error(`invalid format name: ${format}`)
    const client = this.client
    const abort = new AbortController()
    async function* chunks(): AsyncGenerator<Buffer> {
      let finished = false
      try {
        const result = await client.exec({
          query: `${sql}\nFORMAT ${format}`,
          query_params: params ?? {},
          abort_signal: abort.signal,
          clickhouse_settings: { http_write_exception_in_output_format: 0 },
        })
        for await (const chunk of result.stream as AsyncIterable<Buffer>) yield chunk
        finished = true
      } finally {
        if (!finished) abort.abort()
      }
    }
    return Readable.from(chunks(), { objectMode: false })
  }

  async insert(
    table: string,
    given: readonly object[] | Buffer | RowPieces,
    options: InsertOptions = {},
  ): Promise<void> {
    const settings = insertSettings(options)
    if (options.select && !options.rowBinary)
      throw new Error('an insert through a SELECT takes RowBinary rows')
    // The HTTP body is sent as one buffer: pieces are copied into it (their buffer is reused).
    const rows = isRowPieces(given) ? await wholeRows(given, options) : given
    if (Buffer.isBuffer(rows)) {
      if (rows.length === 0) return
      if (!IDENTIFIER.test(table)) throw new Error(`invalid table name: ${table}`)
      const columns = options.compactColumns
      for (const column of columns ?? []) {
        if (!IDENTIFIER.test(column)) throw new Error(`invalid column name: ${column}`)
      }
      const query =
        options.rowBinary && options.select
          ? `${insertSelectStatement(table, options.select, {}, `input(${stringLiteral(rowBinaryColumns(table, options.rowBinary).structure)})`)}\nFORMAT RowBinary`
          : `INSERT INTO ${
              options.rowBinary
                ? `${table} (${rowBinaryColumns(table, options.rowBinary).names}) FORMAT RowBinary`
                : columns
                  ? `${table} (${columns.join(', ')}) FORMAT JSONCompactEachRow`
                  : `${table} FORMAT JSONEachRow`
            }`
      // insert() would JSON-encode a stream item by item; exec() sends the bytes as they are,
      // so the server loads the ready rows itself (RowBinary over HTTP, as the native clients do).
      const result = await this.client.exec({
        query,
        values: Readable.from([rows], { objectMode: false }),
        ...(options.select?.params ? { query_params: options.select.params } : {}),
        clickhouse_settings: settings,
      })
      for await (const _ of result.stream) {
        // drained so the connection is released
      }
      return
    }
    // Serialised here rather than by the client, so both adapters send the same well-formed bytes.
    if (rows.length > 0) await this.insert(table, toJsonEachRow(rows), options)
  }

  async ping(): Promise<boolean> {
    const result = await this.client.ping()
    return result.success
  }

  async close(): Promise<void> {
    await this.client.close()
  }
}

async function wholeRows(rows: RowPieces, options: InsertOptions): Promise<Buffer> {
  piecesColumns(options) // the check every adapter makes of pieces
  const out = Buffer.allocUnsafe(rows.bytes)
  let at = 0
  await rows.pieces((piece) => {
    at += piece.copy(out, at)
    return Promise.resolve()
  })
  return out.subarray(0, at)
}
