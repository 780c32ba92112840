/**
 * The Store port: one ClickHouse SQL dialect, run either by chdb in-process or by a ClickHouse
 * server over HTTP. Values always travel as query parameters ({name:Type} placeholders); SQL text
 * is never built from user input.
 */

import type { Readable } from 'node:stream'

export type QueryParams = Record<string, unknown>

export interface InsertOptions {
  /**
   * ClickHouse insert deduplication token: a retried insert with the same token (and same table)
   * is dropped by the engine. Derive it from the source offsets so replays are idempotent.
   */
  dedupToken?: string
  /** Extra per-insert settings, applied to this insert only. */
  settings?: Record<string, string | number>
  /**
   * With a Buffer: each line is a JSONCompactEachRow array holding these columns in this order
   * (the others take their defaults). Without key names the engine parses a row in about 70 % of
   * the time JSONEachRow takes (measured on `events`), and the rows are ~40 % smaller.
   */
  compactColumns?: readonly string[]
  /**
   * With a Buffer: the rows are RowBinary of these columns ([name, type], in this order; the
   * table's other columns take their defaults). The engine loads a RowBinary row of `events` for
   * about half the CPU of a JSONCompactEachRow row (nothing to parse), a third of a JSONEachRow one.
   */
  rowBinary?: readonly (readonly [name: string, type: string])[]
  /**
   * With RowBinary rows: insert not the rows but what this SELECT makes of them, the engine reading
   * the rows once, as an insert's, with no table in between.
   */
  select?: InsertSelect
  /**
   * A small insert that need not wait behind the pipeline's large ones (a group's receipts while
   * the next group's events are inserted): chdb runs it on a connection of its own, beside the
   * insert and query connections (so on another core); a server runs every request concurrently
   * anyway.
   */
  beside?: boolean
}

/**
 * A SELECT over an insert's rows (InsertOptions.select). `sql` is given the rows as a table
 * function of the `rowBinary` columns (a file on chdb, `input(…)` on a server) to read FROM; its
 * result fills `columns` of the table. `params` are its query parameters ({name:Type}).
 */
export interface InsertSelect {
  columns: readonly string[]
  sql: (rows: string) => string
  params?: QueryParams
}

export interface CommandOptions {
  /**
   * An `INSERT … SELECT` that need not wait behind the pipelines' queries: chdb runs it on the
   * connection its inserts have (beside the main one, so on another core, and failing as inserts
   * fail); a server runs every request concurrently anyway.
   */
  insertConnection?: boolean
}

export interface Store {
  readonly kind: 'chdb' | 'clickhouse'
  /** DDL and other statements that return nothing. */
  command(sql: string, params?: QueryParams, options?: CommandOptions): Promise<void>
  /** A query whose rows come back as objects (JSONEachRow; 64-bit integers as strings). */
  query<T = Record<string, unknown>>(sql: string, params?: QueryParams): Promise<T[]>
  /**
   * A query's result streamed as the engine formats it: the bytes of `format` (JSONEachRow,
   * TabSeparatedRaw, ...) in chunks of a few thousand rows, never whole in memory; reading stops
   * the engine when the reader stops (backpressure), and destroying the stream cancels the query.
   * `sql` has no FORMAT clause. An engine error ends the stream with that error.
   */
  queryStream(sql: string, params: QueryParams | undefined, format: string): Readable
  /**
   * Insert objects, or ready bytes the engine loads itself: JSONEachRow, or JSONCompactEachRow
   * (`compactColumns`), or RowBinary (`rowBinary`), whole (a Buffer) or in pieces (RowPieces,
   * RowBinary only).
   */
  insert(table: string, rows: readonly object[] | Buffer | RowPieces, options?: InsertOptions): Promise<void>
  ping(): Promise<boolean>
  close(): Promise<void>
}

/**
 * Rows given in pieces, so that the caller need not hold them whole: `bytes` in all, handed to
 * `sink` one piece at a time, in order. A piece is valid only until the promise `sink` returned for
 * it resolves (the producer reuses its buffer), so an adapter that keeps a piece longer copies it.
 */
export interface RowPieces {
  readonly bytes: number
  pieces(sink: (piece: Buffer) => Promise<void>): Promise<void>
}

export function isRowPieces(rows: readonly object[] | Buffer | RowPieces): rows is RowPieces {
  return !Buffer.isBuffer(rows) && !Array.isArray(rows) && typeof (rows as RowPieces).pieces === 'function'
}

/** The columns rows in pieces are written under: pieces are RowBinary only, in every adapter. */
export function piecesColumns(options: InsertOptions): NonNullable<InsertOptions['rowBinary']> {
  if (!options.rowBinary) throw new Error('rows in pieces are RowBinary only')
  return options.rowBinary
}

/** Raw execution used by the SQL port: bytes in the format the caller asked for. */
export interface RawExecutor {
  exec(sql: string, options: { params?: QueryParams; format?: string; body?: Buffer }): Promise<Buffer>
  /**
   * A connection of its own to the same engine whose current database is `database` (which must
   * exist), running its calls in order and concurrently with the other connections'; the caller
   * closes it. Absent: every call runs on this executor.
   */
  connectIn?(database: string): Promise<ClosableExecutor>
}

/** A RawExecutor of its own connection (RawExecutor.connectIn). */
export interface ClosableExecutor extends Pick<RawExecutor, 'exec'> {
  close(): void
}
