import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { compileCounts } from '../../pipelines/audiences/compile-rules.ts'
import { ChdbSideConnection } from '../../pipelines/connectors/store/chdb-side-connection.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import { parseTargetRules } from '../../schemas/audiences.ts'
import {
  APP_PROFILEDB,
  generationParams,
  generationStatements,
  HAND_WRITTEN_SQL,
  handWrittenParams,
  ORG_PROFILEDB,
  SEGMENTATION_APP,
  THREE_RULES,
  type GenerationParams,
} from './segmentation-data.ts'

/**
 * The segmentation scenario's engine, a child process (chdb binds one data directory per
 * process): argv = data dir, seed, installs, events, sessions, runs. Opens Sluice's schema in chdb
 * at the data dir (migrations applied), generates the data unless the directory already holds it
 * for these parameters (generated.json), then times the compiled count query of the three-rule
 * audience and the hand-written query of the same rules, alternately, `runs` times each after one
 * warm-up of each. Prints one JSON line.
 */
const [dataDir, seedArg, installsArg, eventsArg, sessionsArg, runsArg] = process.argv.slice(2)
if (!dataDir || !seedArg || !installsArg || !eventsArg || !sessionsArg || !runsArg) {
  process.stderr.write('usage: segmentation-engine <data dir> <seed> <installs> <events> <sessions> <runs>\n')
  process.exit(2)
}
const wanted = {
  seed: Number(seedArg),
  installs: Number(installsArg),
  events: Number(eventsArg),
  sessions: Number(sessionsArg),
}
const runs = Number(runsArg)
const marker = join(dataDir, 'generated.json')
/** Bumped when the generator changes: data of an older generator is made again. */
const GENERATOR_VERSION = 1

interface Generated extends GenerationParams {
  generator: number
  generationMs: number
}

function cached(): Generated | undefined {
  if (!existsSync(marker)) return undefined
  const g = JSON.parse(readFileSync(marker, 'utf8')) as Generated
  const same =
    g.generator === GENERATOR_VERSION &&
    g.seed === wanted.seed &&
    g.installs === wanted.installs &&
    g.events === wanted.events &&
    g.sessions === wanted.sessions
  return same ? g : undefined
}

let generated = cached()
if (!generated && existsSync(dataDir)) rmSync(dataDir, { recursive: true, force: true })
mkdirSync(dataDir, { recursive: true })
const store = await ChdbStore.open(join(dataDir, 'clickhouse'), 'sluice')
try {
  const reused = generated !== undefined
  // Also on a reused data set: migrations added since it was generated apply (none: nothing to do).
  await migrate(store)
  if (!generated) {
    // The exactly-once index is the events writer's business, not segmentation's: not filled here.
    await store.command('DROP VIEW IF EXISTS event_uuid_index_mv')
    const params: GenerationParams = { ...wanted, anchor: Date.now() }
    const started = performance.now()
    for (const { table, sql } of generationStatements()) {
      const t = performance.now()
      await store.command(sql, generationParams(params))
      process.stderr.write(`generated ${table} in ${((performance.now() - t) / 1000).toFixed(1)} s\n`)
    }
    await store.command('OPTIMIZE TABLE devices FINAL')
    await store.command('OPTIMIZE TABLE profiles FINAL')
    generated = { ...params, generator: GENERATOR_VERSION, generationMs: performance.now() - started }
    writeFileSync(marker, JSON.stringify(generated))
  }
  const now = generated.anchor
  const parsed = parseTargetRules(THREE_RULES)
  if (!parsed.ok) throw new Error(`the benched rules do not parse: ${JSON.stringify(parsed.issues)}`)
  const compiled = compileCounts(parsed.rules, {
    appId: SEGMENTATION_APP,
    appProfiledbId: APP_PROFILEDB,
    orgProfiledbId: ORG_PROFILEDB,
    now,
  })
  const hand = { sql: HAND_WRITTEN_SQL, params: handWrittenParams(now) }
  // Both on a side connection, as the audience counter runs its counts in embedded mode.
  const side = await ChdbSideConnection.open(store)
  type Counts = { user_count: string; has_push: string; seen_last_thirty: string }
  // CPU time of this process (the engine's threads: Node only waits meanwhile) survives a machine
  // shared with other work better than wall time does.
  const time = async (q: { sql: string; params: Record<string, unknown> }) => {
    const t = performance.now()
    const cpu = process.cpuUsage()
    const [row] = await side.query<Counts>(q.sql, q.params)
    const used = process.cpuUsage(cpu)
    return { ms: performance.now() - t, cpuMs: (used.user + used.system) / 1000, counts: row }
  }
  const warmCompiled = await time(compiled)
  const warmHand = await time(hand)
  const compiledMs: number[] = []
  const handMs: number[] = []
  const compiledCpuMs: number[] = []
  const handCpuMs: number[] = []
  for (let i = 0; i < runs; i++) {
    const c = await time(compiled)
    compiledMs.push(c.ms)
    compiledCpuMs.push(c.cpuMs)
    const h = await time(hand)
    handMs.push(h.ms)
    handCpuMs.push(h.cpuMs)
  }
  await side.close()
  const [sizes] = await store.query<Record<string, string>>(
    `SELECT (SELECT count() FROM devices) AS devices, (SELECT count() FROM events) AS events,
            (SELECT count() FROM sessions) AS sessions, (SELECT count() FROM profiles) AS profiles`,
  )
  const asNumbers = (c: Counts | undefined) =>
    c && {
      user_count: Number(c.user_count),
      has_push: Number(c.has_push),
      seen_last_thirty: Number(c.seen_last_thirty),
    }
  process.stdout.write(
    JSON.stringify({
      reused,
      generationMs: generated.generationMs,
      rows: Object.fromEntries(Object.entries(sizes ?? {}).map(([k, v]) => [k, Number(v)])),
      compiledMs,
      handMs,
      compiledCpuMs,
      handCpuMs,
      loadAverage: loadavg()[0],
      warmUpMs: { compiled: warmCompiled.ms, hand: warmHand.ms },
      counts: { compiled: asNumbers(warmCompiled.counts), hand: asNumbers(warmHand.counts) },
    }) + '\n',
  )
} finally {
  await store.close()
}
