import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Session } from 'chdb'
import { eventsDdl } from './ddl.ts'

/**
 * Baseline 2, the storage ceiling: ClickHouse's own insert of the same events into the same engine
 * (chdb), into a table with the DDL of Sluice's `events` table, one INSERT per uploaded body. Run
 * as a child process: argv = data dir, DDL file, blocks dir, minimum duration (ms) per format,
 * formats (comma-separated; default JSONEachRow). Prints one JSON result per format.
 *
 * - `JSONEachRow`: `INSERT … FORMAT JSONEachRow` of the rows as Sluice would store them (e2e_ratio).
 * - `RowBinary`, `Native`: the same rows converted beforehand (by the engine, outside the timing)
 *   to the engine's binary formats, and inserted with `INSERT INTO events SELECT * FROM file(…)`,
 *   chdb's way to load bytes that are not text. The cheaper of the two is the floor: the least an
 *   INSERT of these rows costs the engine on this machine (floor_ratio).
 *
 * Each format inserts into a table of its own, and the previous format's table is dropped first, so
 * its background merges do not slow the next one down.
 */
const [dataDir, ddlFile, blocksDir, minMsArg, formatsArg] = process.argv.slice(2)
if (!dataDir || !ddlFile || !blocksDir) {
  process.stderr.write('usage: chdb-insert <data dir> <ddl file> <blocks dir> [min ms] [formats]\n')
  process.exit(2)
}
const minMs = Number(minMsArg ?? 3000)
const formats = (formatsArg ?? 'JSONEachRow').split(',')

const files = readdirSync(blocksDir)
  .filter((f) => f.endsWith('.jsonl'))
  .sort()
  .map((f) => join(blocksDir, f))
const blocks = files.map((f) => readFileSync(f))
const rowsOf = blocks.map((b) => {
  let n = 0
  for (let i = b.indexOf(10); i !== -1; i = b.indexOf(10, i + 1)) n++
  return n
})

interface Timed {
  format: string
  rows: number
  bytes: number
  inserts: number
  ms: number
  rowsPerSecond: number
  insertMs: number[]
  /** CPU of this process (the engine's threads included) while timed. */
  cpuMs: number
  stored: unknown
}

const session = new Session(dataDir)
try {
  await session.queryAsync('CREATE DATABASE IF NOT EXISTS bench; USE bench')
  const ddl = eventsDdl(readFileSync(ddlFile, 'utf8'))
  let previous: string | undefined
  for (const format of formats) {
    const table = `events_${format.toLowerCase()}`
    if (previous) await session.queryAsync(`DROP TABLE IF EXISTS ${previous} SYNC`)
    previous = table
    await session.queryAsync(ddl.replace(/CREATE TABLE IF NOT EXISTS events\b/, `CREATE TABLE ${table}`))
    const result = format === 'JSONEachRow' ? await timeJsonEachRow(table) : await timeBinary(table, format)
    process.stdout.write(JSON.stringify(result) + '\n')
  }
} finally {
  session.close()
}

/** One INSERT … FORMAT JSONEachRow per body, in passes over the bodies until `minMs` is reached. */
async function timeJsonEachRow(table: string): Promise<Timed> {
  const insert = (i: number) => session.insert({ table, values: blocks[i]!, format: 'JSONEachRow' })
  // Warm-up (excluded): the first insert creates the partition directory and loads the code paths.
  if (blocks[0]) await insert(0)
  let rows = 0
  let bytes = 0
  let inserts = 0
  const cpu = process.cpuUsage()
  const started = performance.now()
  const insertMs: number[] = []
  do {
    for (let i = 0; i < blocks.length; i++) {
      const t = performance.now()
      await insert(i)
      insertMs.push(performance.now() - t)
      rows += rowsOf[i]!
      bytes += blocks[i]!.length
      inserts++
      if (performance.now() - started >= minMs * 3) break
    }
  } while (performance.now() - started < minMs && blocks.length > 0)
  return done(
    table,
    'JSONEachRow',
    rows,
    bytes,
    inserts,
    performance.now() - started,
    insertMs,
    cpuMsSince(cpu),
  )
}

/**
 * The same bodies in a binary format: each body is converted to a file by the engine (not timed),
 * then loaded with INSERT … SELECT FROM file(). Bodies are converted as they are needed, so a short
 * run converts only the bodies it times.
 */
async function timeBinary(table: string, format: string): Promise<Timed> {
  const structure = await tableStructure(table)
  const converted = new Map<number, { path: string; bytes: number }>()
  const convert = async (i: number) => {
    let file = converted.get(i)
    if (!file) {
      const path = `${files[i]!}.${format.toLowerCase()}`
      const out = await session.queryAsync(
        `SELECT * FROM file('${files[i]!}', 'JSONEachRow', '${structure}')`,
        { format },
      )
      const bytes = out.bytes()
      writeFileSync(path, bytes)
      converted.set(i, (file = { path, bytes: bytes.length }))
    }
    return file
  }
  const insert = (path: string) =>
    session.queryAsync(`INSERT INTO ${table} SELECT * FROM file('${path}', '${format}', '${structure}')`)
  if (blocks[0]) await insert((await convert(0)).path)
  let rows = 0
  let bytes = 0
  let inserts = 0
  let ms = 0
  let cpuMs = 0
  const insertMs: number[] = []
  do {
    for (let i = 0; i < blocks.length; i++) {
      const file = await convert(i)
      const cpu = process.cpuUsage()
      const t = performance.now()
      await insert(file.path)
      const took = performance.now() - t
      cpuMs += cpuMsSince(cpu)
      insertMs.push(took)
      ms += took
      rows += rowsOf[i]!
      bytes += file.bytes
      inserts++
      if (ms >= minMs) break
    }
  } while (ms < minMs && blocks.length > 0)
  return done(table, format, rows, bytes, inserts, ms, insertMs, cpuMs)
}

/**
 * `name Type, …` of a table, for the file() table function. TabSeparated escapes the quotes in
 * the types (`DateTime64(3, \'UTC\')`), which is what a string literal needs.
 */
async function tableStructure(table: string): Promise<string> {
  const text = (
    await session.queryAsync(
      `SELECT name, type FROM system.columns WHERE database = 'bench' AND table = '${table}' ORDER BY position`,
      { format: 'TabSeparated' },
    )
  ).text()
  return text
    .trim()
    .split('\n')
    .map((line) => line.replace('\t', ' '))
    .join(', ')
}

async function done(
  table: string,
  format: string,
  rows: number,
  bytes: number,
  inserts: number,
  ms: number,
  insertMs: number[],
  cpuMs: number,
): Promise<Timed> {
  const [count] = (await session.queryAsync(`SELECT count() AS n FROM ${table}`, { format: 'JSONEachRow' }))
    .text()
    .split('\n')
  return {
    format,
    rows,
    bytes,
    inserts,
    ms,
    rowsPerSecond: (rows * 1000) / ms,
    insertMs,
    cpuMs,
    stored: JSON.parse(count ?? '{}') as unknown,
  }
}

function cpuMsSince(start: NodeJS.CpuUsage): number {
  const used = process.cpuUsage(start)
  return (used.user + used.system) / 1000
}
