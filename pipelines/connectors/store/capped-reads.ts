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
  /** Closes what the reads keep open (after the last read). */
  close(): Promise<void>
}

/**
 * Settings of every capped read besides the caps. The engine's implicit min-max/count projection of
 * each part answers only counts and partition-key bounds over whole partitions, which no query here
 * asks (each reads some apps' rows), yet weighing it cost a small read 0.5–1.4 ms of the 4–6 ms it
 * took (docs/query-api.md, "Measured").
 */
const READ_SETTINGS = { optimize_use_implicit_projections: 0 } as const

/** The connection settings of a capped chdb read: `clickhouse local` arguments, fixed for a connection's life. */
export function chdbCapArgs(caps: ReadCaps): string[] {
  return [
    '--readonly=1',
    `--max_execution_time=${whole(caps.maxExecutionSeconds)}`,
    '--timeout_overflow_mode=throw',
    `--max_memory_usage=${whole(caps.maxMemoryBytes)}`,
    `--max_threads=${whole(caps.maxThreads)}`,
    ...Object.entries(READ_SETTINGS).map(([name, value]) => `--${name}=${value}`),
  ]
}

/**
 * Embedded: reads on chdb connections of their own, opened read-only with the caps as connection
 * settings (the engine refuses a change in readonly mode), never the pipelines' or the public APIs'
 * connections: a long analyst query never holds up their bound queries, which chdb runs one after
 * another. Up to `idle` connections are kept open between reads and reused: opening one and applying
 * its settings costs the engine about 1.2 ms, a quarter of a small read (docs/query-api.md,
 * "Measured"). A connection keeps nothing of a read but the query parameters it set: each read
 * sets every parameter it names, and a read naming one it does not set is refused before it runs,
 * so no read sees another's values. A connection whose read failed (a cap, an engine error) is
 * closed rather than reused.
 */
export function chdbCappedReads(store: ChdbStore, caps: ReadCaps, idle = 2): CappedReads {
  const args = chdbCapArgs(caps)
  const kept: ChdbSideConnection[] = []
  const inFlight = new Set<Promise<unknown>>()
  let closed = false
  const read = async <T>(sql: string, params: QueryParams): Promise<T[]> => {
    const unset = unsetPlaceholders(sql, params)
    if (unset.length > 0) throw new Error(`query parameters not set: ${unset.join(', ')}`)
    const connection = kept.pop() ?? (await ChdbSideConnection.open(store, args))
    let rows: T[]
    try {
      rows = await connection.query<T>(sql, params)
    } catch (err) {
      await connection.close()
      throw err
    }
    if (!closed && kept.length < idle) kept.push(connection)
    else await connection.close()
    return rows
  }
  return {
    query<T>(sql: string, params: QueryParams): Promise<T[]> {
      if (closed) return Promise.reject(new Error('capped reads are closed'))
      const running = read<T>(sql, params)
      const settled = running.catch(() => undefined)
      inFlight.add(settled)
      void settled.then(() => inFlight.delete(settled))
      return running
    },
    /** Waits for the reads under way, then closes the connections kept. */
    async close(): Promise<void> {
      closed = true
      await Promise.all(inFlight)
      await Promise.all(kept.splice(0).map((c) => c.close()))
    },
  }
}

/** The `{name:Type}` placeholders of `sql` whose parameter `params` does not set. */
export function unsetPlaceholders(sql: string, params: QueryParams): string[] {
  const names = new Set([...sql.matchAll(/\{\s*([A-Za-z_][A-Za-z0-9_]*)\s*:/g)].map((m) => m[1]!))
  return [...names].filter((name) => !Object.hasOwn(params, name))
}

/** Distributed: the server applies the caps as per-query settings (the SQL is compiled: nothing an analyst sends reaches them). */
export function clickhouseCappedReads(store: ClickHouseStore, caps: ReadCaps): CappedReads {
  const settings = {
    max_execution_time: whole(caps.maxExecutionSeconds),
    timeout_overflow_mode: 'throw',
    max_memory_usage: String(whole(caps.maxMemoryBytes)),
    max_threads: whole(caps.maxThreads),
    ...READ_SETTINGS,
  } as const
  return {
    query: <T>(sql: string, params: QueryParams) => store.queryWithSettings<T>(sql, params, settings),
    close: async () => undefined,
  }
}

function whole(n: number): number {
  if (!Number.isSafeInteger(n) || n < 1) throw new Error(`read cap ${n} must be a positive integer`)
  return n
}
