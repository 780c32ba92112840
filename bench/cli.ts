import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import { join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { bareServerBaseline, chdbInsertBaseline } from './baselines/run.ts'
import {
  gzipBodies,
  makeCustomers,
  plainTemplates,
  profilePatchBodies,
  sdkBodies,
  UuidSpace,
  type BodyInstance,
} from './generate.ts'
import { cpuSnapshot, cpuUse, gitInfo, machineInfo } from './machine.ts'
import { deriveSeed, hex, mulberry32 } from './prng.ts'
import { Progress } from './progress.ts'
import {
  buildFigures,
  compareReport,
  formatFigure,
  loadResults,
  writeResults,
  type BenchResults,
} from './report.ts'
import { PROFILES, settle, type BenchContext } from './scenarios/context.ts'
import { freshness } from './scenarios/freshness.ts'
import { overload } from './scenarios/overload.ts'
import { profiles } from './scenarios/profiles.ts'
import { sdkSessions } from './scenarios/sdk.ts'
import {
  edgeBurst,
  endToEnd,
  GZIP_HEADERS,
  gzipSource,
  PLAIN_HEADERS,
  plainSource,
  type BodySource,
} from './scenarios/uploads.ts'
import { RssSampler, SluiceUnderTest } from './sluice.ts'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const USAGE = `usage: npm run bench [-- options]

  (no option)            the full suite against an embedded Sluice started by the bench
  --quick                a short run (under 3 minutes on a 2-core machine)
  --distributed          against Kafka + ClickHouse (KAFKA_BROKERS, CLICKHOUSE_URL must answer)
  --seed N               seed of the generated load (default 1)
  --out DIR              results directory (default bench/results/<timestamp>)
  --skip LIST            skip steps: baselines,edge,sdk,plain,gzip,freshness,profiles,overload
  --keep-data            keep the benched Sluice's data directory
  --cpu-prof             profile the Sluice processes (every thread) into <results>/profiles/{edge,main}
  --compare A B          print a side-by-side table of two results directories and exit
`

/** Settings the benched Sluice gets beyond its defaults (see bench/README.md). */
const SLUICE_SETTINGS = {
  // The per-key upload limit (150/s) would cap every throughput scenario at 150 bodies/s.
  SLUICE_UPLOAD_RATE_PER_KEY: '1000000',
  // The per-key profile limit (50,000/min) would cap the PATCH scenario at 833/s; the
  // per-customer limit (15/min) stays: the load is spread over many customers instead.
  SLUICE_PROFILE_RATE_PER_KEY_PER_MIN: '100000000',
}

async function main(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      quick: { type: 'boolean', default: false },
      distributed: { type: 'boolean', default: false },
      seed: { type: 'string', default: '1' },
      out: { type: 'string' },
      skip: { type: 'string', default: '' },
      'keep-data': { type: 'boolean', default: false },
      'cpu-prof': { type: 'boolean', default: false },
      compare: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  })
  if (values.help) {
    process.stdout.write(USAGE)
    return 0
  }
  if (values.compare) {
    const [a, b] = positionals
    if (!a || !b) {
      process.stderr.write(`--compare needs two results directories\n\n${USAGE}`)
      return 2
    }
    process.stdout.write(compareReport(loadResults(a), loadResults(b), [a, b]))
    return 0
  }
  const seed = Number(values.seed)
  if (!Number.isInteger(seed)) {
    process.stderr.write(`--seed must be an integer\n`)
    return 2
  }
  const skip = new Set(
    values.skip
      .split(',')
      .map((s) => s.trim())
      .filter(Boolean),
  )
  const profile = PROFILES[values.quick ? 'quick' : 'full']
  const progress = new Progress()
  const log = (line: string) => progress.log(line)

  const distributedEnv: Record<string, string> = {}
  if (values.distributed) {
    const reach = await distributedReachable()
    if (!reach.ok) {
      process.stderr.write(`bench --distributed: ${reach.reason}\n`)
      return 2
    }
    const tag = randomBytes(4).toString('hex')
    distributedEnv.CLICKHOUSE_DATABASE = `sluice_bench_${tag}`
    distributedEnv.SLUICE_TOPIC_PREFIX = `sluice.bench.${tag}.`
  }

  const wallStart = performance.now()
  // --quick must end within 3 minutes: waits are cut to fit, and scenarios that no longer fit are
  // skipped (reported as such) rather than overrun.
  const budgetEnd = values.quick ? wallStart + 165_000 : Infinity
  const fits = (name: string, ms: number) => {
    if (skip.has(name)) return false
    if (performance.now() + ms <= budgetEnd) return true
    results.skipped = { ...results.skipped, [name]: 'quick time budget used up' }
    log(`  ${name}: skipped (quick time budget used up)`)
    return false
  }
  const startedAt = new Date()
  const runId = startedAt.toISOString().replace(/[:.]/g, '-')
  const outDir = resolve(values.out ?? join(ROOT, 'bench', 'results', runId))
  const workDir = mkdtempSync(join(tmpdir(), 'sluice-bench-'))
  const cpuStart = cpuSnapshot()
  const machine = machineInfo()
  const settings: Record<string, string> = { ...SLUICE_SETTINGS, ...distributedEnv }
  for (const [k, v] of Object.entries(process.env))
    if (k.startsWith('SLUICE_') && v !== undefined) settings[k] = v
  const notes: string[] = [
    `Sluice started with ${Object.entries(SLUICE_SETTINGS)
      .map(([k, v]) => `${k}=${v}`)
      .join(
        ', ',
      )} (the per-key limits would otherwise cap the throughput scenarios); every other setting at its default unless set in the environment.`,
    `Senders back off at most 200 ms after a 429/503 (not the full Retry-After) so the pipeline stays saturated in the max-rate scenarios.`,
  ]
  const results: Omit<BenchResults, 'figures'> & { figures?: BenchResults['figures'] } = {
    version: 1,
    run: {
      id: runId,
      startedAt: startedAt.toISOString(),
      mode: values.distributed ? 'distributed' : 'embedded',
      profile: profile.name,
      seed,
      git: gitInfo(ROOT),
      machine,
      settings,
      notes,
    },
    baselines: { bare: [], chdb: [] },
    scenarios: { edge: [], e2e: [] },
    durations: {},
    rss: [],
    errors: [],
  }
  log(
    `sluice bench: ${profile.name} run, ${results.run.mode} mode, seed ${seed}; ${machine.cores} cores, load average ${machine.loadAverage.join(' ')}`,
  )
  const step = async <T>(name: string, work: () => Promise<T>): Promise<T | undefined> => {
    const t = performance.now()
    try {
      const value = await work()
      results.durations[name] = performance.now() - t
      log(`  ${name}: ${((performance.now() - t) / 1000).toFixed(1)} s`)
      return value
    } catch (err) {
      progress.stop()
      results.durations[name] = performance.now() - t
      const message = err instanceof Error ? err.message : String(err)
      results.errors.push(`${name}: ${message}`)
      log(`  ${name}: FAILED after ${((performance.now() - t) / 1000).toFixed(1)} s: ${message}`)
      return undefined
    }
  }

  // --- Load, generated before any timing ---------------------------------------------------------
  const run8 = hex(mulberry32(deriveSeed(seed, 'run')), 8)
  const apps = {
    plain: `bench-plain-${run8}`,
    gzip: `bench-gzip-${run8}`,
    fresh: `bench-fresh-${run8}`,
    overload: `bench-overload-${run8}`,
  }
  const spaces = {
    plain: new UuidSpace(run8, '0001'),
    gzip: new UuidSpace(run8, '0002'),
    fresh: new UuidSpace(run8, '0003'),
    overload: new UuidSpace(run8, '0004'),
  }
  const now = Date.now()
  const generated = await step('generate', async () => {
    const customers = makeCustomers(seed, profile.customers)
    const sdk = Object.values(apps).flatMap((app) =>
      sdkBodies(seed, app, customers, 100, now).map((b) => ({ app, ...b })),
    )
    const templates = (app: string, space: UuidSpace) =>
      plainTemplates({
        seed,
        app,
        customers,
        space,
        count: profile.plainTemplates,
        eventsPerBody: profile.eventsPerPlainBody,
        now,
      })
    const plain = {
      plain: templates(apps.plain, spaces.plain),
      fresh: templates(apps.fresh, spaces.fresh),
      overload: templates(apps.overload, spaces.overload),
    }
    progress.start('generate', () => 'gzip bodies')
    const gzip = gzipBodies({
      seed,
      app: apps.gzip,
      customers,
      space: spaces.gzip,
      count: profile.gzipBodies,
      now,
    })
    progress.stop()
    const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length)
    return { customers, sdk, plain, gzip, profileBodies: profilePatchBodies(seed, 512), avg }
  })
  if (!generated) return finish(1)
  const { customers, sdk, plain, gzip, profileBodies, avg } = generated
  results.generation = {
    ms: results.durations.generate ?? 0,
    plainBodyBytes: Math.round(avg(plain.plain.map((t) => t.buffer.length))),
    gzipBodyBytes: Math.round(avg(gzip.map((g) => g.instance.body.length))),
    gzipEvents: Math.round(avg(gzip.map((g) => g.instance.events))),
    gzipInflatedBytes: Math.round(avg(gzip.map((g) => g.inflatedBytes))),
  }
  const g = results.generation
  log(
    `  load: ${customers.length} customers; plain bodies ${profile.eventsPerPlainBody} events, ${Math.round(g.plainBodyBytes / 1024)} KB; ` +
      `gzip bodies ${g.gzipEvents} events, ${Math.round(g.gzipBodyBytes / 1024)} KB (${(g.gzipInflatedBytes / 1048576).toFixed(1)} MB inflated, ${Math.round(g.gzipInflatedBytes / g.gzipEvents)} B/event)`,
  )

  // --- Baselines, measured first on the same bodies ------------------------------------------------
  const auth = {
    Authorization: `Basic ${Buffer.from('bench-key:bench-secret-of-realistic-length').toString('base64')}`,
  }
  if (!skip.has('baselines')) {
    const ddlFile = join(ROOT, 'schemas', 'clickhouse', '002_events.sql')
    const bare = async (kind: 'plain' | 'gzip' | 'gzip+inflate') => {
      const bodies =
        kind === 'plain'
          ? plain.plain.map((t) => ({ body: t.buffer, events: t.kinds.length }))
          : gzip.map((x) => ({ body: x.instance.body, events: x.instance.events }))
      const r = await bareServerBaseline({
        kind,
        bodies,
        headers: { ...auth, ...(kind === 'plain' ? PLAIN_HEADERS : GZIP_HEADERS) },
        concurrency: profile.concurrency,
        durationMs: profile.baselineMs,
        progress,
        inflate: kind === 'gzip+inflate',
      })
      results.baselines.bare.push(r)
      log(
        `    bare HTTP ${kind}: ${(r.bytesPerSecond / 1048576).toFixed(1)} MB/s, ${Math.round(r.requestsPerSecond)} req/s`,
      )
    }
    const chdb = async (kind: 'plain' | 'gzip') => {
      const blocks = kind === 'plain' ? plain.plain.map((t) => t.rows) : gzip.map((x) => x.rows)
      const r = await chdbInsertBaseline({
        kind,
        blocks,
        workDir,
        ddlFile,
        minDurationMs: profile.baselineMs,
        progress,
      })
      results.baselines.chdb.push(r)
      log(
        `    chdb INSERT ${kind}: ${Math.round(r.rowsPerSecond).toLocaleString('en-US')} rows/s (${r.inserts} inserts)`,
      )
    }
    await step('baseline:bare-http:plain', () => bare('plain'))
    await step('baseline:bare-http:gzip', () => bare('gzip'))
    // Informational (not in edge_ratio): the same server inflating each gzip body, as the edge must.
    await step('baseline:bare-http:gzip+inflate', () => bare('gzip+inflate'))
    await step('baseline:chdb-insert:plain', () => chdb('plain'))
    await step('baseline:chdb-insert:gzip', () => chdb('gzip'))
  }

  // --- Sluice ------------------------------------------------------------------------------------
  const adminToken = randomBytes(24).toString('hex')
  const startSluice = (name: string) =>
    SluiceUnderTest.start({
      distributed: values.distributed,
      adminToken,
      nodeArgs: values['cpu-prof'] ? ['--cpu-prof', `--cpu-prof-dir=${join(outDir, 'profiles', name)}`] : [],
      env: {
        SLUICE_DATA_DIR: join(workDir, name),
        ...SLUICE_SETTINGS,
        ...(values.distributed
          ? {
              ...distributedEnv,
              CLICKHOUSE_DATABASE: `${distributedEnv.CLICKHOUSE_DATABASE}_${name}`,
              SLUICE_TOPIC_PREFIX: `${distributedEnv.SLUICE_TOPIC_PREFIX}${name}.`,
            }
          : { KAFKA_BROKERS: '', CLICKHOUSE_URL: '' }),
      },
    })
  let current: SluiceUnderTest | undefined
  const onSignal = () => {
    progress.stop()
    process.stderr.write('\ninterrupted: stopping Sluice\n')
    void (current?.stop(5000) ?? Promise.resolve()).finally(() => process.exit(130))
  }
  process.once('SIGINT', onSignal)
  process.once('SIGTERM', onSignal)
  const t0 = wallStart
  const contextFor = async (
    label: string,
    sut: SluiceUnderTest,
    rss: RssSampler,
  ): Promise<BenchContext | undefined> => {
    const tenant = await step(`tenant${label}`, () => sut.tenant(`bench-${run8}`, Object.values(apps)))
    if (!tenant) return undefined
    return {
      sut,
      tenant,
      progress,
      profile,
      customers,
      t0,
      rss,
      log,
      uuidSpace: (x) => new UuidSpace(run8, x),
      budgetEnd,
    }
  }
  const alive = (sut: SluiceUnderTest) => {
    if (!sut.alive)
      throw new Error(`Sluice exited (${sut.child.exitCode ?? sut.child.signalCode}):\n${sut.output()}`)
  }

  // Edge bursts, on a Sluice of their own: the max-rate bodies pile up on its bus and are discarded
  // with it, so they never hold up the end-to-end scenarios.
  if (!skip.has('edge')) {
    const edgeSut = await step('start-sluice (edge)', () => startSluice('edge'))
    current = edgeSut
    if (edgeSut) {
      const rssEdge = new RssSampler(edgeSut.pid, t0)
      const ctx = await contextFor(' (edge)', edgeSut, rssEdge)
      if (ctx) {
        const burst = async (name: string, source: BodySource) => {
          alive(edgeSut)
          const r = await edgeBurst(ctx, {
            name,
            source,
            durationMs: profile.edgeMs,
            concurrency: profile.concurrency,
          })
          results.scenarios.edge.push(r)
          log(
            `    accepted ${(r.acceptedBytesPerSecond / 1048576).toFixed(1)} MB/s (${Math.round(r.acceptedEventsPerSecond)} ev/s, ${r.acceptedBodies} bodies); ` +
              `answers ${JSON.stringify(r.statuses)}; CPU sluice ${r.cpu.sluice.toFixed(2)} bench ${r.cpu.bench.toFixed(2)} other ${r.cpu.other.toFixed(2)}`,
          )
        }
        await step('edge-plain', () =>
          burst('edge-plain', plainSource(plain.plain, new UuidSpace(run8, '00e1'))),
        )
        await step('edge-gzip', () =>
          burst(
            'edge-gzip',
            cycle(
              GZIP_HEADERS,
              gzip.map((x) => x.instance),
            ),
          ),
        )
      }
      rssEdge.stop()
      // Its backlog is of no interest: no graceful drain (unless profiling: the profile is written at exit).
      if (values['cpu-prof']) await step('stop-sluice (edge)', () => edgeSut.stop(20_000))
      else await step('kill-sluice (edge)', () => edgeSut.kill())
    }
  }

  const sut = await step('start-sluice', () => startSluice('main'))
  current = sut
  if (!sut) return finish(1)
  const rss = new RssSampler(sut.pid, t0)
  const ctx = await contextFor('', sut, rss)
  if (!ctx) {
    await sut.stop()
    return finish(1)
  }

  if (!skip.has('sdk'))
    results.scenarios.sdk = await step('sdk-sessions', async () => {
      const r = await sdkSessions(ctx, sdk, { maxMs: profile.name === 'quick' ? 60_000 : 300_000 })
      log(
        `    ${r.rows} SDK rows, ${Math.round(r.rowsPerSecond)} rows/s to receipts done${r.complete ? '' : ' (INCOMPLETE)'}`,
      )
      return r
    })

  const e2e = async (name: string, app: string, source: BodySource, eventsPerBody: number) => {
    alive(sut)
    const r = await endToEnd(ctx, {
      name,
      app,
      source,
      durationMs: profile.e2eMs,
      concurrency: profile.concurrency,
      window: Math.max(profile.window, Math.round(profile.windowBodies * eventsPerBody)),
    })
    results.scenarios.e2e.push(r)
    log(
      `    ${Math.round(r.queryableEventsPerSecond)} ev/s queryable (accepted ${Math.round(r.acceptedEventsPerSecond)} ev/s); stored ${r.stored}/${r.expectedStored}${r.drainComplete ? '' : ' (drain incomplete)'}; ` +
        `answers ${JSON.stringify(r.statuses)}; CPU sluice ${r.cpu.sluice.toFixed(2)} bench ${r.cpu.bench.toFixed(2)} other ${r.cpu.other.toFixed(2)}`,
    )
    return r
  }
  const plainResult = skip.has('plain')
    ? undefined
    : await step('e2e-plain', () =>
        e2e('e2e-plain', apps.plain, plainSource(plain.plain, spaces.plain), profile.eventsPerPlainBody),
      )
  const gzipResult = skip.has('gzip')
    ? undefined
    : await step('e2e-gzip', () =>
        e2e(
          'e2e-gzip',
          apps.gzip,
          gzipSource(gzip.map((x) => x.instance)),
          gzip.reduce((sum, x) => sum + x.instance.events, 0) / Math.max(1, gzip.length),
        ),
      )
  // The max sustained rate: events/s made queryable with plain bodies (what freshness and overload use).
  const maxSustained = plainResult?.queryableEventsPerSecond || gzipResult?.queryableEventsPerSecond || 2000
  results.run.notes.push(
    `Max sustained rate (events/s made queryable, plain bodies): ${Math.round(maxSustained)}; freshness runs at half of it, overload at twice.`,
  )

  if (fits('freshness', profile.freshnessMs + 5000))
    results.scenarios.freshness = await step('freshness', async () => {
      alive(sut)
      const idle = await settle(ctx, 20_000)
      if (!idle.idle)
        results.run.notes.push('freshness started with a backlog still on the bus (not idle after 20 s)')
      const r = await freshness(ctx, {
        app: apps.fresh,
        source: plainSource(plain.fresh, spaces.fresh),
        eventsPerBody: profile.eventsPerPlainBody,
        maxSustainedEventsPerSecond: maxSustained,
        durationMs: profile.freshnessMs,
      })
      log(
        `    ${r.targetBodiesPerSecond.toFixed(1)} bodies/s; ${r.samples} samples: p50 ${Math.round(r.freshnessMs.p50 ?? NaN)} ms, p99 ${Math.round(r.freshnessMs.p99 ?? NaN)} ms; answers ${JSON.stringify(r.statuses)}`,
      )
      return r
    })

  if (fits('profiles', profile.profilesMs + 3000))
    results.scenarios.profiles = await step('profiles', async () => {
      alive(sut)
      const r = await profiles(ctx, {
        bodies: profileBodies,
        durationMs: profile.profilesMs,
        concurrency: profile.concurrency,
        customers: profile.profileCustomers,
      })
      if (r.skipped !== undefined) log(`    skipped: ${r.skipped}`)
      else
        log(
          `    ${Math.round(r.patchesPerSecond)} PATCH/s; read-your-writes p50 ${Math.round(r.readYourWritesMs.p50 ?? NaN)} ms, p99 ${Math.round(r.readYourWritesMs.p99 ?? NaN)} ms (${r.readYourWritesMs.count} samples); answers ${JSON.stringify(r.statuses)}`,
        )
      return r
    })

  if (fits('overload', profile.overloadMs + 10_000))
    results.scenarios.overload = await step('overload', async () => {
      alive(sut)
      await settle(ctx, 10_000)
      const r = await overload(ctx, {
        app: apps.overload,
        source: plainSource(plain.overload, spaces.overload),
        space: spaces.overload,
        eventsPerBody: profile.eventsPerPlainBody,
        maxSustainedEventsPerSecond: maxSustained,
        durationMs: profile.overloadMs,
        drainMs: profile.overloadDrainMs,
      })
      log(
        `    ${r.targetBodiesPerSecond.toFixed(1)} bodies/s asked; answers ${JSON.stringify(r.statuses)}; RSS max ${Math.round(r.rssMaxMb ?? NaN)} MB; ` +
          `${r.acceptedEvents} accepted events, ${r.lost} lost, ${r.storedTwice} stored twice; drain ${r.drainComplete ? 'complete' : 'INCOMPLETE'} in ${(r.drainMs / 1000).toFixed(1)} s`,
      )
      return r
    })

  rss.stop()
  results.rss = rss.samples.map(([t, v]): [number, number] => [Math.round(t * 100) / 100, Math.round(v)])
  const code = await step('stop-sluice', () => sut.stop())
  if (code !== 0 && code !== undefined) results.errors.push(`Sluice exited with ${code} on SIGTERM`)
  process.removeListener('SIGINT', onSignal)
  process.removeListener('SIGTERM', onSignal)
  return finish(results.errors.length > 0 ? 1 : 0)

  function finish(exitCode: number): number {
    progress.stop()
    results.run.wallMs = performance.now() - wallStart
    results.run.finishedAt = new Date().toISOString()
    results.run.cpu = cpuUse(cpuStart, cpuSnapshot())
    const full = { ...results, figures: buildFigures(results) } as BenchResults
    try {
      writeResults(outDir, full)
    } catch (err) {
      process.stderr.write(`could not write results to ${outDir}: ${String(err)}\n`)
    }
    if (!values['keep-data']) rmSync(workDir, { recursive: true, force: true })
    else log(`data kept in ${workDir}`)
    const cpu = full.run.cpu
    const lines = [
      '',
      `results: ${relative(process.cwd(), outDir) || outDir} (results.json, report.md, SVG charts)`,
      `wall time ${(full.run.wallMs! / 1000).toFixed(1)} s; ${full.run.mode}, ${full.run.profile}; noise: other processes used ${cpu ? cpu.other.toFixed(2) : 'n/a'} of ${machine.cores} cores on average (load average ${machine.loadAverage.join(' ')} at start)`,
    ]
    if (full.errors.length > 0) lines.push(`errors: ${full.errors.length} (see report.md)`)
    lines.push(...full.figures.map(formatFigure))
    process.stdout.write(lines.join('\n') + '\n')
    return exitCode
  }
}

/** A body source cycling over fixed bodies (uuids repeat: for the edge bursts only). */
function cycle(headers: Record<string, string>, bodies: readonly BodyInstance[]): BodySource {
  let i = 0
  return { kind: 'gzip', headers, next: () => bodies[i++ % bodies.length] }
}

/** KAFKA_BROKERS and CLICKHOUSE_URL set and answering. */
async function distributedReachable(): Promise<{ ok: true } | { ok: false; reason: string }> {
  const brokers = (process.env.KAFKA_BROKERS ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  const clickhouse = process.env.CLICKHOUSE_URL ?? ''
  if (brokers.length === 0 || !clickhouse)
    return {
      ok: false,
      reason: 'KAFKA_BROKERS and CLICKHOUSE_URL must be set (Kafka and ClickHouse are not reachable)',
    }
  const broker = brokers[0]!
  const [host, port] = broker.includes(':')
    ? [broker.slice(0, broker.lastIndexOf(':')), Number(broker.slice(broker.lastIndexOf(':') + 1))]
    : [broker, 9092]
  const kafkaOk = await new Promise<boolean>((resolve) => {
    const socket = connect({ host, port, timeout: 3000 })
    socket.once('connect', () => {
      socket.destroy()
      resolve(true)
    })
    socket.once('timeout', () => {
      socket.destroy()
      resolve(false)
    })
    socket.once('error', () => resolve(false))
  })
  if (!kafkaOk) return { ok: false, reason: `Kafka is not reachable at ${broker} (KAFKA_BROKERS)` }
  try {
    const res = await fetch(new URL('/ping', clickhouse), { signal: AbortSignal.timeout(3000) })
    if (!res.ok)
      return {
        ok: false,
        reason: `ClickHouse at ${clickhouse} answered ${res.status} to /ping (CLICKHOUSE_URL)`,
      }
  } catch (err) {
    return {
      ok: false,
      reason: `ClickHouse is not reachable at ${clickhouse} (CLICKHOUSE_URL): ${String(err)}`,
    }
  }
  return { ok: true }
}

main(process.argv.slice(2)).then(
  (code) => process.exit(code),
  (err: unknown) => {
    process.stderr.write(`bench: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`)
    process.exit(1)
  },
)
