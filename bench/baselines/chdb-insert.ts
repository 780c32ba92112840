import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { Session } from 'chdb'
import { eventsDdl } from './ddl.ts'

/**
 * Baseline 2, the storage ceiling: ClickHouse's own `INSERT … FORMAT JSONEachRow` of the same
 * events into the same engine (chdb), into a table with the DDL of Sluice's `events` table. Run as
 * a child process: argv = data dir, DDL file, blocks dir, minimum duration (ms). Loads every block
 * (one file per uploaded body, rows as Sluice would store them) before timing, inserts one block
 * per INSERT, passes over the blocks until the minimum duration is reached, prints a JSON result.
 */
const [dataDir, ddlFile, blocksDir, minMsArg] = process.argv.slice(2)
if (!dataDir || !ddlFile || !blocksDir) {
  process.stderr.write('usage: chdb-insert <data dir> <ddl file> <blocks dir> [min ms]\n')
  process.exit(2)
}
const minMs = Number(minMsArg ?? 3000)

const blocks = readdirSync(blocksDir)
  .filter((f) => f.endsWith('.jsonl'))
  .sort()
  .map((f) => readFileSync(join(blocksDir, f)))
const rowsOf = blocks.map((b) => {
  let n = 0
  for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) n++
  return n
})
const session = new Session(dataDir)
try {
  await session.queryAsync('CREATE DATABASE IF NOT EXISTS bench; USE bench')
  await session.queryAsync(eventsDdl(readFileSync(ddlFile, 'utf8')))
  // Warm-up (excluded): the first insert creates the partition directory and loads the code paths.
  if (blocks[0]) await session.insert({ table: 'events', values: blocks[0], format: 'JSONEachRow' })
  let rows = 0
  let bytes = 0
  let inserts = 0
  const started = performance.now()
  const insertMs: number[] = []
  do {
    for (let i = 0; i < blocks.length; i++) {
      const t = performance.now()
      await session.insert({ table: 'events', values: blocks[i]!, format: 'JSONEachRow' })
      insertMs.push(performance.now() - t)
      rows += rowsOf[i]!
      bytes += blocks[i]!.length
      inserts++
      if (performance.now() - started >= minMs * 3) break
    }
  } while (performance.now() - started < minMs && blocks.length > 0)
  const ms = performance.now() - started
  const [count] = (
    await session.queryAsync('SELECT count() AS n FROM bench.events', { format: 'JSONEachRow' })
  )
    .text()
    .split('\n')
  process.stdout.write(
    JSON.stringify({
      rows,
      bytes,
      inserts,
      ms,
      rowsPerSecond: (rows * 1000) / ms,
      insertMs,
      stored: JSON.parse(count ?? '{}') as unknown,
    }) + '\n',
  )
} finally {
  session.close()
}
