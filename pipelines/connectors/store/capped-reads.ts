import type { ChdbStore } from './chdb-store.ts'
import { ChdbSideConnection } from './chdb-side-connection.ts'
import type { ClickHouseStore } from './clickhouse-store.ts'
import type { QueryParams } from './store.ts'

/** Limits the engine itself enforces on every capped read: no query text or parameter lifts them. */
export interface ReadCaps {
  maxExecutionSeconds: number
  maxMemoryBytes: number
  maxThreads: number
}

/** Reads on behalf of analysts (the Query API): each under the caps, away from the pipelines' connections. */
export interface CappedReads {
  query<T = Record<string, unknown>>(sql: string, params: QueryParams): Promise<T[]>
}

/**
 * Embedded: each read on a chdb connection of its own, opened read-only with the caps as connection
 * settings (the engine refuses a change in readonly mode) and closed after it, as the SQL port's
 * analyst statements run (docs/sql-port.md): a long analyst query never holds up a pipeline's or the
 * public APIs' bound queries, which chdb runs one after another.
 */
export function chdbCappedReads(store: ChdbStore, caps: ReadCaps): CappedReads {
  const args = [
    '--readonly=1',
    `--max_execution_time=${whole(caps.maxExecutionSeconds)}`,
    '--timeout_overflow_mode=throw',
    `--max_memory_usage=${whole(caps.maxMemoryBytes)}`,
    `--max_threads=${whole(caps.maxThreads)}`,
  ]
  return {
    async query<T>(sql: string, params: QueryParams): Promise<T[]> {
      const connection = await ChdbSideConnection.open(store, args)
      try {
        return await connection.query<T>(sql, params)
      } finally {
        await connection.close()
      }
    },
  }
}

/** Distributed: the server applies the caps as per-query settings (the SQL is compiled: nothing an analyst sends reaches them). */
export function clickhouseCappedReads(store: ClickHouseStore, caps: ReadCaps): CappedReads {
  const settings = {
    max_execution_time: whole(caps.maxExecutionSeconds),
    timeout_overflow_mode: 'throw',
    max_memory_usage: String(whole(caps.maxMemoryBytes)),
    max_threads: whole(caps.maxThreads),
  } as const
  return {
    query: <T>(sql: string, params: QueryParams) => store.queryWithSettings<T>(sql, params, settings),
  }
}

function whole(n: number): number {
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`read cap ${n} must be a positive integer`)
  return n
}
