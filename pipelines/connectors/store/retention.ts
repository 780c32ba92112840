/**
 * Retention per table: after the migrations, the migration step gives each table that grows with
 * traffic (schemas/clickhouse/retention.ts) the TTL its retention setting (services/config.ts) asks for, as
 * `ALTER TABLE t MODIFY TTL <time> + INTERVAL <days> DAY`, or `ALTER TABLE t REMOVE TTL` when the
 * setting is unset again. On a cluster the statements take their cluster form (cluster-ddl.ts):
 * `ON CLUSTER`, on the shards' local tables.
 *
 * A TTL change makes the engine rewrite every part holding expired rows (a mutation), so a
 * statement runs only when the setting differs from what the step last set, which it records in
 * `table_retention` (migration 035). Two processes starting at once may both run it: the same
 * statement twice is the same TTL.
 *
 * The days are whole numbers checked here, and the tables and time expressions constants: no
 * text from outside reaches the SQL (DDL takes no query parameters).
 */
import {
  MAX_RETENTION_DAYS,
  RETAINED_TABLES,
  type RetainedTableName,
} from '../../../schemas/clickhouse/retention.ts'
import type { Store } from './store.ts'

/** Days each retained table keeps its rows; undefined (or absent): the table's migration default. */
export type Retention = Partial<Record<RetainedTableName, number | undefined>>

export interface RetentionChange {
  table: RetainedTableName
  /** The TTL now in force, in days; null: none. */
  days: number | null
}

export const RETAINED_TABLE_NAMES = Object.keys(RETAINED_TABLES) as RetainedTableName[]

/** The TTL in days a table should have under `retention` (0: none). */
export function wantedDays(retention: Retention, table: RetainedTableName): number {
  const days = retention[table] ?? RETAINED_TABLES[table].migrationDays ?? 0
  return days === 0 ? 0 : checkedDays(table, days)
}

/** `days` when it is a whole number of days a TTL may keep; throws otherwise. */
function checkedDays(table: RetainedTableName, days: number): number {
  if (!(Number.isSafeInteger(days) && days >= 1 && days <= MAX_RETENTION_DAYS))
    throw new Error(
      `retention of ${table}: ${days} is not a whole number of days from 1 to ${MAX_RETENTION_DAYS}`,
    )
  return days
}

/** The single-node statement that gives `table` a TTL of `days` (0: removes its TTL). */
export function retentionStatement(table: RetainedTableName, days: number): string {
  const { time } = RETAINED_TABLES[table]
  if (days === 0) return `ALTER TABLE ${table} REMOVE TTL`
  return `ALTER TABLE ${table} MODIFY TTL ${time} + INTERVAL ${checkedDays(table, days)} DAY`
}

/**
 * Bring every retained table's TTL to what `retention` asks for. `toStatements` gives a
 * statement's form for this store (on a cluster, its cluster form). Returns the tables changed.
 */
export async function applyRetention(
  store: Store,
  retention: Retention,
  toStatements: (statement: string) => string[] = (statement) => [statement],
): Promise<RetentionChange[]> {
  const recorded = await store.query<{ table_name: string; days: number | string }>(
    'SELECT table_name, days FROM table_retention FINAL',
  )
  const have = new Map(recorded.map((r) => [r.table_name, Number(r.days)]))
  const changes: RetentionChange[] = []
  for (const table of RETAINED_TABLE_NAMES) {
    const want = wantedDays(retention, table)
    const current = have.get(table) ?? RETAINED_TABLES[table].migrationDays ?? 0
    if (want === current) continue
    for (const statement of toStatements(retentionStatement(table, want))) await store.command(statement)
    await store.insert('table_retention', [{ table_name: table, days: want, applied_at: Date.now() }])
    changes.push({ table, days: want === 0 ? null : want })
  }
  return changes
}
