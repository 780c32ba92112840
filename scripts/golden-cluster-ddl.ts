/**
 * Writes the cluster DDL of every migration to schemas/clickhouse/cluster/ (the golden files
 * test/unit/cluster-ddl.test.ts compares against). Run after adding a migration or changing the
 * cluster layout, and read the diff: it is what a cluster will run.
 */
import { mkdir, readdir, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import {
  CLUSTER_GOLDEN_DIR,
  clusterGoldenFiles,
  loadMigrations,
} from '../pipelines/connectors/store/migrations.ts'

const files = clusterGoldenFiles(await loadMigrations())
await mkdir(CLUSTER_GOLDEN_DIR, { recursive: true })
for (const stale of await readdir(CLUSTER_GOLDEN_DIR)) {
  if (stale.endsWith('.sql') && !files.has(stale)) await rm(join(CLUSTER_GOLDEN_DIR, stale))
}
for (const [name, text] of files) await writeFile(join(CLUSTER_GOLDEN_DIR, name), text)
process.stdout.write(`wrote ${files.size} files to ${CLUSTER_GOLDEN_DIR}\n`)
