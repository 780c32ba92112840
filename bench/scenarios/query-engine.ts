import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { chdbCappedReads } from '../../pipelines/connectors/store/capped-reads.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { loadMigrations, migrate } from '../../pipelines/connectors/store/migrations.ts'
import { compileQuery, windowStart } from '../../pipelines/query/compile-query.ts'
import { parseQuery } from '../../pipelines/query/parse-query.ts'
import { resultRows } from '../../pipelines/query/result-set.ts'
import { withinEstimate } from '../../pipelines/query/rollup-fit.ts'
import {
  QUERY_APP,
  queryGenerationParams,
  queryGenerationStatements,
  queryShapes,
  type QueryGeneration,
} from './query-data.ts'

/**
 * The query scenario's engine, a child process (chdb binds one data directory per process).
 *
 *   query-engine shapes <data dir> <seed> <apps> <installs> <sessions> <events> <runs> <threshold>
 *     Opens Sluice's schema in chdb at the data dir (migrations applied), generates the data unless
 *     the directory holds it for these parameters (generated.json), merges the rollups' parts (see
 *     mergeRollups), then for each shape runs the
 *     Query API's path (parameters parsed, compiled, run, rows keyed) and the hand-written SQL,
 *     alternately, `runs` times each after a warm-up, on one connection with the Query API's engine
 *     caps (the Query API's capped reads), and compares their answers.
 *   query-engine upkeep <data dir> <seed> <events>
 *     The rollups' cost on the insert path: a fresh schema, `events` rows generated, then inserted
 *     again through `events_ingest` (the writer's way) in blocks of 50,000, stamped as live
 *     traffic is (one after another, a millisecond apart), with the rollup views and without them,
 *     alternately; engine CPU per event each way. Then the same for the views on `sessions`: the
 *     generated session starts inserted into `sessions` in blocks of 5,000, with them and without.
 * Prints one JSON line.
 */
const [mode, dataDir, ...rest] = process.argv.slice(2)
if ((mode !== 'shapes' && mode !== 'upkeep') || !dataDir) {
  process.stderr.write('usage: query-engine shapes|upkeep <data dir> …\n')
  process.exit(2)
}
/** Bumped when the generator changes: data of an older generator is made again. */
const GENERATOR_VERSION = 1
/** The Query API's engine caps (their defaults in services/config.ts), for both sides. */
const CAPS = { maxExecutionSeconds: 30, maxMemoryBytes: 1024 ** 3, maxThreads: 1 }

const cpuMs = (since: NodeJS.CpuUsage) => {
  const used = process.cpuUsage(since)
  return (used.user + used.system) / 1000
}

async function generate(store: ChdbStore, g: QueryGeneration): Promise<void> {
  // The exactly-once index is the events writer's business: not filled here.
  await store.command('DROP VIEW IF EXISTS event_uuid_index_mv')
  for (const { table, sql } of queryGenerationStatements()) {
    const t = performance.now()
    await store.command(sql, queryGenerationParams(g))
    process.stderr.write(`generated ${table} in ${((performance.now() - t) / 1000).toFixed(1)} s\n`)
  }
}

/** The rollup tables (migrations 027 and 038). */
const ROLLUPS = ['query_rollup', 'query_session_hours', 'query_session_lengths']

/**
 * The rollups as a running store's background merges leave them: one row per key. Generated at
 * once, every insert block of the data set spans all 90 days, so each block adds a row per app,
 * hour and event name (most of them again) until parts merge; live traffic's blocks span a minute
 * and add a row per app and event name of that hour. Partitions already merged are left alone.
 */
async function mergeRollups(store: ChdbStore): Promise<void> {
  for (const table of ROLLUPS) {
    const t = performance.now()
    await store.command(`OPTIMIZE TABLE ${table} FINAL SETTINGS optimize_skip_merged_partitions = 1`)
    process.stderr.write(`merged ${table} in ${((performance.now() - t) / 1000).toFixed(1)} s\n`)
  }
}

/** A value as compared: numbers (the engine's 64-bit integers arrive as text) and strings. */
const plain = (v: unknown): string | number | null => {
  if (v === null || v === undefined) return null
  if (typeof v === 'number') return v
  const text = typeof v === 'string' ? v : JSON.stringify(v)
  return /^-?\d+(\.\d+)?$/.test(text) ? Number(text) : text
}

/** Whether two answers are the same rows: exact numbers to 9 digits, estimated ones within the bound. */
function compare(
  api: unknown[][],
  hand: unknown[][],
  estimatedColumns: Set<number>,
): { equal: boolean; maxEstimateError: number } {
  let maxEstimateError = 0
  if (api.length !== hand.length) return { equal: false, maxEstimateError }
  const key = (row: unknown[]) => JSON.stringify(row.filter((_, i) => !estimatedColumns.has(i)).map(String))
  const sorted = (rows: unknown[][]) => [...rows].sort((a, b) => (key(a) < key(b) ? -1 : 1))
  const [a, b] = [sorted(api), sorted(hand)]
  let equal = true
  a.forEach((row, r) =>
    row.forEach((v, i) => {
      const w = b[r]![i]
      if (estimatedColumns.has(i) && typeof v === 'number' && typeof w === 'number') {
        maxEstimateError = Math.max(maxEstimateError, w === 0 ? Math.abs(v) : Math.abs(v - w) / w)
        if (!withinEstimate(v, w)) equal = false
      } else if (typeof v === 'number' && typeof w === 'number') {
        if (Number(v.toPrecision(9)) !== Number(w.toPrecision(9))) equal = false
      } else if (v !== w) equal = false
    }),
  )
  return { equal, maxEstimateError }
}

async function shapes(args: string[]) {
  const [seed, apps, installs, sessions, events, runsArg, thresholdArg] = args.map(Number)
  const wanted = { seed: seed!, apps: apps!, installs: installs!, sessions: sessions!, events: events! }
  const runs = runsArg!
  const marker = join(dataDir!, 'generated.json')
  type Generated = QueryGeneration & { generator: number; generationMs: number }
  let generated: Generated | undefined
  if (existsSync(marker)) {
    const g = JSON.parse(readFileSync(marker, 'utf8')) as Generated
    const same =
      g.generator === GENERATOR_VERSION &&
      (Object.keys(wanted) as (keyof typeof wanted)[]).every((k) => g[k] === wanted[k])
    if (same) generated = g
  }
  if (!generated && existsSync(dataDir!)) rmSync(dataDir!, { recursive: true, force: true })
  mkdirSync(dataDir!, { recursive: true })
  const store = await ChdbStore.open(join(dataDir!, 'clickhouse'), 'sluice')
  try {
    const reused = generated !== undefined
    await migrate(store)
    if (!generated) {
      const g: QueryGeneration = { ...wanted, anchor: Date.now() }
      const started = performance.now()
      await generate(store, g)
      generated = { ...g, generator: GENERATOR_VERSION, generationMs: performance.now() - started }
      writeFileSync(marker, JSON.stringify(generated))
    }
    await mergeRollups(store)
    const now = generated.anchor
    // Both sides read as the Query API does (capped-reads.ts): a connection kept open between reads,
    // opened read-only with the caps.
    const reads = chdbCappedReads(store, CAPS, 1)
    const results = []
    for (const shape of queryShapes(thresholdArg!)) {
      const parsed = parseQuery(shape.params)
      const api = async () => {
        // What the route does after authentication: parse, compile, run under the caps, key the rows.
        const q = parseQuery(shape.params)
        const compiled = compileQuery(q, { now, timeZone: 'UTC', profiledbId: 0 })
        const rows = await reads.query<Record<string, unknown>>(compiled.sql, compiled.params)
        return { compiled, results: resultRows(rows, compiled.columns, q.limit).results }
      }
      const handParams = {
        app: QUERY_APP,
        from: windowStart(now, parsed.days ?? 90, 'UTC'),
        ...shape.extra,
      }
      const hand = () => reads.query<Record<string, unknown>>(shape.sql, handParams)
      const time = async <T>(f: () => Promise<T>) => {
        const t = performance.now()
        const cpu = process.cpuUsage()
        const value = await f()
        return { ms: performance.now() - t, cpuMs: cpuMs(cpu), value }
      }
      const warmApi = await time(api)
      const warmHand = await time(hand)
      const apiMs: number[] = []
      const handMs: number[] = []
      const apiCpuMs: number[] = []
      const handCpuMs: number[] = []
      for (let i = 0; i < runs; i++) {
        const a = await time(api)
        apiMs.push(a.ms)
        apiCpuMs.push(a.cpuMs)
        const h = await time(hand)
        handMs.push(h.ms)
        handCpuMs.push(h.cpuMs)
      }
      const { compiled } = warmApi.value
      const apiRows = warmApi.value.results.map((r) => compiled.columns.map((c) => plain(r[c.name])))
      const handRows = warmHand.value.map((r) => Object.values(r).map(plain))
      const estimatedColumns = new Set(
        compiled.columns.flatMap((c, i) => (compiled.estimated.includes(c.name) ? [i] : [])),
      )
      const { equal, maxEstimateError } = compare(apiRows, handRows, estimatedColumns)
      results.push({
        name: shape.name,
        source: compiled.source,
        estimated: compiled.estimated,
        rows: apiRows.length,
        equal,
        maxEstimateError,
        apiMs,
        handMs,
        apiCpuMs,
        handCpuMs,
        ...(!equal && { api: apiRows.slice(0, 5), hand: handRows.slice(0, 5) }),
      })
    }
    await reads.close()
    const [sizes] = await store.query<Record<string, string>>(
      `SELECT (SELECT count() FROM events) AS events, (SELECT count() FROM sessions) AS sessions,
              (SELECT count() FROM raw_log) AS raw_log,
              ${ROLLUPS.map((t) => `(SELECT count() FROM ${t}) AS ${t}`).join(', ')}`,
    )
    process.stdout.write(
      JSON.stringify({
        reused,
        generationMs: generated.generationMs,
        rows: Object.fromEntries(Object.entries(sizes ?? {}).map(([k, v]) => [k, Number(v)])),
        shapes: results,
        loadAverage: loadavg()[0],
      }) + '\n',
    )
  } finally {
    await store.close()
  }
}

/** The rollup views of migrations 027 and 038, as written there, with the table each reads. */
async function rollupViews(): Promise<{ name: string; sql: string; from: string }[]> {
  const loaded = await loadMigrations()
  return [27, 38].flatMap((version) => {
    const migration = loaded.find((m) => m.version === version)
    if (!migration) throw new Error(`migration ${version} (query rollups) not found`)
    return migration.statements.flatMap((sql) => {
      const name = /^CREATE MATERIALIZED VIEW IF NOT EXISTS (\w+)/.exec(sql)?.[1]
      const from = /\bFROM (\w+)/.exec(sql)?.[1]
      return name && from ? [{ name, sql, from }] : []
    })
  })
}

async function upkeep(args: string[]) {
  const [seed, events] = args.map(Number)
  const BLOCK = 50_000
  /** Session starts per insert: a batch of SDK uploads holds far fewer starts than events. */
  const SESSION_BLOCK = 5_000
  const ROUNDS = 3
  rmSync(dataDir!, { recursive: true, force: true })
  mkdirSync(dataDir!, { recursive: true })
  const store = await ChdbStore.open(join(dataDir!, 'clickhouse'), 'sluice')
  try {
    await migrate(store)
    const sessions = Math.max(1, Math.round(events! / 7))
    await generate(store, {
      seed: seed!,
      apps: 50,
      installs: Math.max(1, Math.round(sessions / 3)),
      sessions,
      events: events!,
      anchor: Date.now(),
    })
    const columns = `app_id, received_at, source, transaction_id, uuid, customer_id, event_name, event_time, attributes,
      ltv_change, install_uuid, device_uuid, session_uuid, country, language, app_version, os_version, platform, model,
      device_timezone`
    /**
     * A numbered copy of `table`'s generated rows, and the SELECT list that stamps them as live
     * traffic arrives: the rows of an insert a millisecond apart, so a block of 50,000 spans under a
     * minute (the generated set spreads them over 90 days, which no live insert does).
     */
    const liveSource = async (table: string, copy: string, cols: string, time: string) => {
      await store.command(
        `CREATE TABLE ${copy} ENGINE = MergeTree ORDER BY n AS
         SELECT rowNumberInAllBlocks() AS n, ${cols} FROM ${table}`,
      )
      return cols.replace(
        new RegExp(`\\b${time}\\b`),
        `fromUnixTimestamp64Milli(toInt64({t0:Int64} + n), 'UTC') AS ${time}`,
      )
    }
    const live = await liveSource('events', 'upkeep_source', columns, 'event_time')
    const views = await rollupViews()
    type Timing = { cpuMs: number; ms: number }
    /** Empties `table`, then inserts `rows` rows of `source` into it in blocks, stamped as live ones. */
    const insertBlocks =
      (o: { table: string; into: string; select: string; source: string; rows: number; block: number }) =>
      async (): Promise<Timing> => {
        await store.command(`TRUNCATE TABLE ${o.table}`)
        const cpu = process.cpuUsage()
        const t = performance.now()
        for (let b = 0; b < Math.ceil(o.rows / o.block); b++)
          await store.command(
            `INSERT INTO ${o.into} SELECT ${o.select} FROM ${o.source}
             WHERE n >= {lo:UInt64} AND n < {hi:UInt64}`,
            { lo: b * o.block, hi: (b + 1) * o.block, t0: Date.now() },
          )
        return { cpuMs: cpuMs(cpu), ms: performance.now() - t }
      }
    /** Rounds with the views and without them, alternated after a warm-up. */
    const alternate = async (insert: () => Promise<Timing>, dropped: typeof views) => {
      const withViews: Timing[] = []
      const withoutViews: Timing[] = []
      await insert() // warm-up
      for (let round = 0; round < ROUNDS; round++) {
        withViews.push(await insert())
        for (const v of dropped) await store.command(`DROP VIEW IF EXISTS ${v.name}`)
        withoutViews.push(await insert())
        for (const v of dropped) await store.command(v.sql)
      }
      return { withViews, withoutViews }
    }
    const { withViews, withoutViews } = await alternate(
      insertBlocks({
        table: 'events',
        into: `events_ingest (${columns})`,
        select: live,
        source: 'upkeep_source',
        rows: events!,
        block: BLOCK,
      }),
      views,
    )
    // The views on `sessions` run on inserts into `sessions` (the SDK builder's, one per batch of
    // uploads), which the events above never make: their cost per insert block, measured the same
    // way on the generated session starts, stamped as live ones.
    const sessionColumns =
      'app_id, session_uuid, install_uuid, customer_id, started_at, app_ver, os_ver, platform, country'
    const liveStarts = await liveSource('sessions', 'upkeep_sessions', sessionColumns, 'started_at')
    const sessionBlocks = Math.ceil(sessions / SESSION_BLOCK)
    const sessionsViews = views.filter((v) => v.from === 'sessions')
    const sessionsTimed =
      sessionsViews.length > 0
        ? await alternate(
            insertBlocks({
              table: 'sessions',
              into: `sessions (${sessionColumns})`,
              select: liveStarts,
              source: 'upkeep_sessions',
              rows: sessions,
              block: SESSION_BLOCK,
            }),
            sessionsViews,
          )
        : { withViews: [], withoutViews: [] }
    const sessionsWith = sessionsTimed.withViews
    const sessionsWithout = sessionsTimed.withoutViews
    process.stdout.write(
      JSON.stringify({
        events,
        blockSize: BLOCK,
        withViews,
        withoutViews,
        sessions: {
          rows: sessions,
          blocks: sessionBlocks,
          blockSize: SESSION_BLOCK,
          with: sessionsWith,
          without: sessionsWithout,
        },
      }) + '\n',
    )
  } finally {
    await store.close()
    rmSync(dataDir!, { recursive: true, force: true })
  }
}

if (mode === 'shapes') await shapes(rest)
else await upkeep(rest)
