import { mkdirSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import { baselineInsertSql } from './imports-data.ts'

/**
 * The import scenario's baseline, a child process (chdb binds one data directory per process):
 * argv = data dir, the gzip CSV. In Sluice's schema in chdb, the engine reads the file itself
 * (its CSV input format, through gzip) into `profiles`, the attributes built as Sluice stores them.
 * One untimed run first (code loaded, for a fair start), into another profile db; the timed one
 * is the second. Prints one JSON line: { ms, cpuMs (the process's CPU time meanwhile), rows }.
 */
const [dataDir, csv] = process.argv.slice(2)
if (!dataDir || !csv) {
  process.stderr.write('usage: imports-engine <data dir> <file.csv.gz>\n')
  process.exit(2)
}
rmSync(dataDir, { recursive: true, force: true })
mkdirSync(dataDir, { recursive: true })
const store = await ChdbStore.open(join(dataDir, 'clickhouse'), 'sluice')
try {
  await migrate(store)
  process.stderr.write('baseline: warming up\n')
  await store.command(baselineInsertSql(1, 1, csv))
  process.stderr.write("baseline: the engine's CSV insert\n")
  const started = performance.now()
  const cpu = process.cpuUsage()
  await store.command(baselineInsertSql(2, 2, csv))
  const ms = performance.now() - started
  const used = process.cpuUsage(cpu)
  const cpuMs = (used.user + used.system) / 1000
  const [row] = await store.query<{ n: string | number }>(
    'SELECT count() AS n FROM profiles WHERE profiledb_id = 2',
  )
  process.stdout.write(`${JSON.stringify({ ms, cpuMs, rows: Number(row?.n ?? 0) })}\n`)
} finally {
  await store.close()
  rmSync(dataDir, { recursive: true, force: true })
}
