import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { ClusterCatalog, clusterStatements, type ClusterTarget } from './cluster-ddl.ts'
import {
  applyRetention,
  RETAINED_TABLE_NAMES,
  retentionStatement,
  wantedDays,
  type Retention,
  type RetentionChange,
} from './retention.ts'
import type { Store } from './store.ts'

export const MIGRATIONS_DIR = fileURLToPath(new URL('../../../schemas/clickhouse/', import.meta.url))

export interface Migration {
  version: number
  name: string
  /** sha256 of the statements (comments are not part of what a migration does). */
  checksum: string
  /**
   * Checksums an applied migration may be recorded with besides `checksum`: the file's whole text,
   * which the runner recorded before comments stopped counting, and that text's earlier versions
   * whose only change since was to a comment (`EARLIER_FILE_CHECKSUMS`).
   */
  accepted: string[]
  statements: string[]
  /**
   * The engine version a statement needs, by its index in `statements` (a `-- engine >= X.Y` line
   * right before it): on an older engine the statement is left out and the migration is recorded
   * all the same, so it must be one whose absence changes no answer (an optional projection, say).
   */
  needs?: Record<number, EngineVersion>
}

/** An engine version, major and minor (`SELECT version()` gives `26.7.2.1`). */
export type EngineVersion = [number, number]

const GUARD = /^--\s*engine\s*>=\s*(\d+)\.(\d+)\s*$/

/**
 * Whole-file checksums of migrations whose comments were edited after databases applied them
 * (recorded then as the file's checksum): 017's comment named a bench diary section
 * (`git show 94393aa`).
 */
const EARLIER_FILE_CHECKSUMS: Record<number, string[]> = {
  17: ['b5fdb0570a8c33e9d7178ebc8e585ddd3311c5275f34b13756cc27a7c368cfca'],
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex')

export interface MigrationResult {
  applied: number[]
  skipped: number[]
  /** The retained tables whose TTL this run changed (only when `retention` was given). */
  retention?: RetentionChange[]
}

/** Split a migration file into statements: `;` at the end of a line ends one; `--` lines are comments. */
export function splitStatements(sql: string): string[] {
  const withoutComments = sql
    .split('\n')
    .filter((line) => !line.trim().startsWith('--'))
    .join('\n')
  return withoutComments
    .split(/;\s*(?:\n|$)/)
    .map((s) => s.trim())
    .filter((s) => s.length > 0)
}

/**
 * The `-- engine >= X.Y` lines of a migration file, by the index of the statement each precedes
 * (the statements as splitStatements counts them).
 */
export function statementGuards(sql: string): Record<number, EngineVersion> {
  const needs: Record<number, EngineVersion> = {}
  let index = 0
  let pending: EngineVersion | undefined
  let open = false
  for (const line of sql.split('\n')) {
    const trimmed = line.trim()
    const guard = GUARD.exec(trimmed)
    if (guard) pending = [Number(guard[1]), Number(guard[2])]
    if (trimmed.startsWith('--') || trimmed === '') continue
    if (!open && pending) {
      needs[index] = pending
      pending = undefined
    }
    open = true
    if (/;\s*$/.test(trimmed)) {
      open = false
      index++
    }
  }
  return needs
}

/** Whether `version` is `need` or later. */
export const engineAtLeast = (version: EngineVersion, need: EngineVersion) =>
  version[0] > need[0] || (version[0] === need[0] && version[1] >= need[1])

/** The statements the engine at `version` runs: those it is recent enough for. */
function statementsFor(migration: Migration, version: EngineVersion | undefined): Migration {
  const needs = migration.needs
  if (!needs || !version) return migration
  return {
    ...migration,
    statements: migration.statements.filter((_, i) => !needs[i] || engineAtLeast(version, needs[i])),
  }
}

export async function loadMigrations(dir = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => /^\d{3,}_[\w-]+\.sql$/.test(f)).sort()
  const migrations: Migration[] = []
  for (const file of files) {
    const text = await readFile(join(dir, file), 'utf8')
    const version = Number.parseInt(file, 10)
    const statements = splitStatements(text)
    const needs = statementGuards(text)
    migrations.push({
      version,
      name: file.replace(/\.sql$/, ''),
      checksum: sha256(statements.join(';\n')),
      accepted: [sha256(text), ...(EARLIER_FILE_CHECKSUMS[version] ?? [])],
      statements,
      ...(Object.keys(needs).length > 0 && { needs }),
    })
  }
  const versions = new Set(migrations.map((m) => m.version))
  if (versions.size !== migrations.length) throw new Error(`duplicate migration version in ${dir}`)
  return migrations
}

const MIGRATIONS_TABLE = `CREATE TABLE IF NOT EXISTS schema_migrations
    (version UInt32, name String, checksum String, applied_at DateTime64(3, 'UTC'))
    ENGINE = ReplacingMergeTree ORDER BY version`

/**
 * The migrations as a cluster runs them (cluster-ddl.ts): the same files, versions and checksums
 * (what is recorded as applied is the one description), each statement in its cluster form. The
 * transform reads every migration in order, as later statements depend on how earlier ones placed
 * their tables.
 */
export function clusterMigrations(
  migrations: readonly Migration[],
  target: ClusterTarget,
  catalog = new ClusterCatalog(),
): Migration[] {
  return migrations.map((migration) => {
    try {
      return { ...migration, statements: clusterStatements(migration.statements, target, catalog) }
    } catch (err) {
      throw new Error(`migration ${migration.name}: ${(err as Error).message}`, { cause: err })
    }
  })
}

export interface MigrateOptions {
  /** Run the cluster form of every statement (CLICKHOUSE_CLUSTER); unset: the files as written. */
  cluster?: ClusterTarget
  /**
   * The TTL of each table that grows with traffic (the retention settings; retention.ts), brought to
   * these after the migrations. Unset: no table's TTL is looked at.
   */
  retention?: Retention
}

/**
 * Apply every migration not yet recorded in `schema_migrations`. Each statement is idempotent
 * (IF NOT EXISTS), so two processes migrating at once, or a crash half-way, converge.
 */
export async function migrate(
  store: Store,
  dir = MIGRATIONS_DIR,
  options: MigrateOptions = {},
): Promise<MigrationResult> {
  const { cluster } = options
  const [bootstrap] = cluster
    ? clusterStatements([MIGRATIONS_TABLE], cluster, new ClusterCatalog())
    : [MIGRATIONS_TABLE]
  await store.command(bootstrap as string)
  const rows = await store.query<{ version: number; checksum: string }>(
    'SELECT version, checksum FROM schema_migrations FINAL',
  )
  const done = new Map(rows.map((r) => [Number(r.version), r.checksum]))
  const result: MigrationResult = { applied: [], skipped: [] }
  const all = await loadMigrations(dir)
  // A statement that needs a recent engine is left out on an older one (asked only when a migration
  // to apply has one); unknown, every statement runs.
  const guarded = all.some((m) => m.needs && !done.has(m.version))
  const version = guarded ? await engineVersion(store) : undefined
  const loaded = all.map((m) => statementsFor(m, version))
  // On a cluster, the later statements (the retention ALTERs) are rewritten by where the
  // migrations placed each table.
  const catalog = new ClusterCatalog()
  for (const migration of cluster ? clusterMigrations(loaded, cluster, catalog) : loaded) {
    const recorded = done.get(migration.version)
    if (recorded !== undefined) {
      if (recorded !== migration.checksum && !migration.accepted.includes(recorded)) {
        throw new Error(
          `migration ${migration.name} was changed after it was applied; add a new migration instead`,
        )
      }
      result.skipped.push(migration.version)
      continue
    }
    try {
      for (const statement of migration.statements) await store.command(statement)
    } catch (err) {
      // Roles started together (docker compose up) migrate at once. A statement can fail because
      // another process got further (006 copies a table that 007, applied by the other, drops):
      // then that process has recorded this migration, and its work stands.
      if (!(await recordedSince(store, migration.version))) throw err
      result.skipped.push(migration.version)
      continue
    }
    await store.insert('schema_migrations', [
      {
        version: migration.version,
        name: migration.name,
        checksum: migration.checksum,
        applied_at: Date.now(),
      },
    ])
    result.applied.push(migration.version)
  }
  if (options.retention)
    result.retention = await applyRetention(
      store,
      options.retention,
      cluster ? (statement) => clusterStatements([statement], cluster, catalog) : undefined,
    )
  return result
}

/** The engine's version (the server's, or chdb's), or undefined when it does not say. */
async function engineVersion(store: Store): Promise<EngineVersion | undefined> {
  const [row] = await store.query<{ v: string }>('SELECT version() AS v')
  const match = /^(\d+)\.(\d+)/.exec(String(row?.v ?? ''))
  return match ? [Number(match[1]), Number(match[2])] : undefined
}

/** Whether `version` (or a later migration, which implies it) is recorded as applied. */
async function recordedSince(store: Store, version: number): Promise<boolean> {
  const [row] = await store.query<{ n: number | string }>(
    'SELECT count() AS n FROM schema_migrations WHERE version >= {version:UInt32}',
    { version },
  )
  return Number(row?.n ?? 0) > 0
}

/** Where the checked-in cluster DDL of every migration lives (test/unit/cluster-ddl.test.ts). */
export const CLUSTER_GOLDEN_DIR = join(MIGRATIONS_DIR, 'cluster')

/** The cluster and database the checked-in cluster DDL is written for (docker-compose.cluster.yml's). */
export const GOLDEN_CLUSTER: ClusterTarget = { cluster: 'sluice_cluster', database: 'sluice' }

/** The checked-in cluster DDL: one file per migration, named like it, as `npm run golden:cluster-ddl` writes it. */
export function clusterGoldenFiles(migrations: readonly Migration[]): Map<string, string> {
  const files = new Map<string, string>()
  for (const migration of clusterMigrations(migrations, GOLDEN_CLUSTER)) {
    const header =
      `-- Cluster DDL of ${migration.name}.sql on cluster ${GOLDEN_CLUSTER.cluster}, database ` +
      `${GOLDEN_CLUSTER.database}: what CLICKHOUSE_CLUSTER runs instead of the file's statements.\n` +
      `-- Generated by \`npm run golden:cluster-ddl\` (pipelines/connectors/store/cluster-ddl.ts); do not edit.\n`
    files.set(`${migration.name}.sql`, header + migration.statements.map((s) => `\n${s};\n`).join(''))
  }
  files.set(RETENTION_GOLDEN, retentionGolden(migrations))
  return files
}

/** The golden file of the retention statements' cluster form (retention.ts), beside the migrations'. */
export const RETENTION_GOLDEN = 'retention.sql'

/** Example days of the retention golden file: any whole number takes the same form. */
const GOLDEN_RETENTION_DAYS = 400

function retentionGolden(migrations: readonly Migration[]): string {
  const catalog = new ClusterCatalog()
  clusterMigrations(migrations, GOLDEN_CLUSTER, catalog)
  const header =
    `-- Cluster DDL of the retention settings on cluster ${GOLDEN_CLUSTER.cluster}, database ` +
    `${GOLDEN_CLUSTER.database}: per retained table, what the migration step runs when its setting\n` +
    `-- becomes ${GOLDEN_RETENTION_DAYS} days, then what it runs when the setting is unset again (REMOVE TTL, or the TTL\n` +
    `-- its migration gave it; pipelines/connectors/store/retention.ts).\n` +
    `-- Generated by \`npm run golden:cluster-ddl\` (pipelines/connectors/store/cluster-ddl.ts); do not edit.\n`
  const statements = RETAINED_TABLE_NAMES.flatMap((table) =>
    [GOLDEN_RETENTION_DAYS, wantedDays({}, table)].flatMap((days) =>
      clusterStatements([retentionStatement(table, days)], GOLDEN_CLUSTER, catalog),
    ),
  )
  return header + statements.map((s) => `\n${s};\n`).join('')
}
