import { createWriteStream, existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { Transform, type TransformCallback } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { createGzip } from 'node:zlib'
import { compileMembers } from '../../pipelines/audiences/compile-rules.ts'
import { LocalFiles } from '../../pipelines/connectors/files/local-files.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import { DAY_MS, HOUR_MS } from '../../pipelines/exports/export-kinds.ts'
import { logHourQuery, membersSubquery } from '../../pipelines/exports/export-queries.ts'
import { latestFile } from '../../pipelines/exports/export-records.ts'
import {
  EXPORT_GZIP_CHUNK_BYTES,
  EXPORT_GZIP_LEVEL,
  exportWriter,
} from '../../pipelines/exports/export-writer.ts'
import { encodeExportRequest } from '../../pipelines/exports/generation-requests.ts'
import { parseTargetRules } from '../../schemas/audiences.ts'

/**
 * The export scenario's engine, a child process (chdb binds one data directory per process):
 * argv = data dir, rows. In Sluice's schema in chdb it generates one app-hour of `rows` raw-log
 * rows and an app of `rows` iOS installs with a session each, then, for each:
 *   - Sluice's export writer (the real stage: the engine's JSON lines through gzip into the files
 *     port, recorded in export_files), with its RSS sampled every 20 ms;
 *   - the baseline: the engine's own `SELECT … FORMAT JSONEachRow` of the same rows, through gzip
 *     (zlib, the writer's level and output chunk: EXPORT_GZIP_LEVEL 6, 256 KB) into a file.
 * After one untimed run of each, each is run `runs` times, alternately; the faster run of each
 * counts (memory: the largest growth). Both sides are measured alike: 2.5 s of settling first
 * (the allocators hand back what the previous run freed), then RSS every 20 ms and the engine's
 * tracked memory every 100 ms, the largest sample minus the first. Prints one JSON line.
 */
class LineCount extends Transform {
  rows = 0
  override _transform(chunk: Buffer, _encoding: BufferEncoding, callback: TransformCallback): void {
    let at = chunk.indexOf(10)
    while (at !== -1) {
      this.rows++
      at = chunk.indexOf(10, at + 1)
    }
    callback(null, chunk)
  }
}

const [dataDir, rowsArg, runsArg = '2'] = process.argv.slice(2)
if (!dataDir || !rowsArg) {
  process.stderr.write('usage: exports-engine <data dir> <rows> [runs]\n')
  process.exit(2)
}
const rows = Number(rowsArg)
const runs = Math.max(1, Number(runsArg))

interface Measured {
  ms: number
  rows: number
  /** Growth of the whole process's resident memory (the engine's included), MB. */
  rssGrowthMb: number
  /** Growth of Node's own memory (heap and buffers, garbage not yet collected included), MB. */
  jsGrowthMb: number
  /** Growth of the engine's tracked memory (ClickHouse's MemoryTracking: queries, caches), MB. */
  engineGrowthMb: number
}
/** Bumped when the generator changes: data of an older generator is made again. */
const GENERATOR_VERSION = 2
const marker = join(dataDir, 'generated.json')
const now = Date.now()
/** Data generated less than a week ago is reused (sessions must stay within the audience's 30 days). */
const cached = (() => {
  if (!existsSync(marker)) return undefined
  const m = JSON.parse(readFileSync(marker, 'utf8')) as { v: number; rows: number; at: number; hour: number }
  return m.v === GENERATOR_VERSION && m.rows === rows && now - m.at < 7 * DAY_MS ? m : undefined
})()
const reused = cached !== undefined
if (!reused) rmSync(dataDir, { recursive: true, force: true })
mkdirSync(dataDir, { recursive: true })
const store = await ChdbStore.open(join(dataDir, 'clickhouse'), 'sluice')
const filesDir = join(dataDir, 'files')
rmSync(filesDir, { recursive: true, force: true })
const files = new LocalFiles(filesDir)
const say = (line: string) => process.stderr.write(`${line}\n`)

const APP = 'bench-export-app'
// The hour of the log rows: a day before generation, within the 30 days a log file is kept.
const hour = cached?.hour ?? Math.floor((now - DAY_MS) / HOUR_MS) * HOUR_MS
const parsed = parseTargetRules({
  behavior_profile_operator: 'and',
  targeting_type: 'install_id',
  behavior: {
    days: 30,
    behavior_rule_operator: 'and',
    rules: [{ rule_type: 'session', count: 1, count_operator: 'at_least' }],
  },
})
if (!parsed.ok) throw new Error('bench audience rules do not parse')
const rules = parsed.rules

async function generate(): Promise<void> {
  say(`generating ${rows.toLocaleString('en-US')} raw-log rows`)
  let t = performance.now()
  // Rows as the SDK builder stores them: the log fields as columns, and every field as JSON in `row`.
  await store.command(
    `INSERT INTO raw_log (app_id, type, uuid, at, install_uuid, device_uuid, session_uuid, customer_id, sent_customer_id, name,
                          attributes, app_ver, os_ver, platform, model, country, language, device_timezone,
                          push_status, row, transaction_id, received_at)
     SELECT {app:String}, t, u, fromUnixTimestamp64Milli(at_ms, 'UTC'), inst, concat('dev-', inst), sess, cust, cust,
            if(t = 'e', 'Viewed Screen', ''), if(t = 'e', map('screen', 'home', 'n', toString(n % 17)), map()),
            '3.2.1', '17.4', 'iOS', 'iPhone15,2', 'fr', 'fr', 'Europe/Paris', 'Enabled (Prominent)',
            concat('{"type":', toJSONString(t), ',"uuid":', toJSONString(u), ',"install_uuid":', toJSONString(inst),
                   ',"at_millis":', toString(at_ms), ',"customer_id":', toJSONString(cust),
                   ',"name":', toJSONString(if(t = 'e', 'Viewed Screen', '')),
                   ',"attributes":', if(t = 'e', concat('{"screen":"home","n":"', toString(n % 17), '"}'), '{}'),
                   ',"device_uuid":', toJSONString(concat('dev-', inst)), ',"session_uuid":', toJSONString(sess),
                   ',"app_ver":"3.2.1","os_ver":"17.4","platform":"iOS","model":"iPhone15,2","country":"fr",',
                   '"language":"fr","device_timezone":"Europe/Paris","push_token":', toJSONString(concat('tok-', inst)),
                   ',"push_status":"Enabled (Prominent)","carrier":"Orange","browser":"","bundle_id":"com.example.app",',
                   '"user_type":"known","library_ver":"iOS_6.1.0","advertising_id":', toJSONString(upper(toString(generateUUIDv4(n)))),
                   ',"birth_date":"","lat":48.8566,"lng":2.3522,"nth":', toString(n % 40),
                   ',"sec_since_last_session":3600,"device_new":false,"jailbroken":false,"limit_advertising":false}'),
            'tx-bench', fromUnixTimestamp64Milli(at_ms, 'UTC')
     FROM (SELECT number AS n, ['s', 'e', 'e', 'e', 'c'][n % 5 + 1] AS t, toString(generateUUIDv4(n)) AS u,
                  toInt64({hour:Int64} + (n * 3599999) % 3600000) AS at_ms,
                  concat('inst-', toString(intDiv(n, 5))) AS inst, concat('sess-', toString(intDiv(n, 5))) AS sess,
                  concat('cust-', toString(intDiv(n, 5))) AS cust
           FROM numbers({rows:UInt64}))`,
    { app: APP, hour, rows },
  )
  say(`  inserted in ${((performance.now() - t) / 1000).toFixed(1)} s`)
  await store.command('OPTIMIZE TABLE raw_log FINAL')
  say(
    `  in ${((performance.now() - t) / 1000).toFixed(1)} s; generating ${rows.toLocaleString('en-US')} installs`,
  )
  t = performance.now()
  await store.insert('orgs', [{ id: 1, name: 'bench', profiledb_id: 1, created_at: now, version: 1 }])
  await store.insert('apps', [
    { app_id: APP, org_id: 1, name: 'bench', profiledb_id: 2, created_at: now, deleted: 0, version: 1 },
  ])
  await store.command(
    `INSERT INTO devices (app_id, install_uuid, device_uuid, customer_id, last_active_at, platform, push_token,
                          push_status, advertising_id, limit_advertising, version)
     SELECT {app:String}, concat('inst-', toString(number)), concat('dev-', toString(number)), concat('cust-', toString(number)),
            now64(3), 'iOS', concat('tok-', toString(number)), 'Enabled (Prominent)',
            upper(toString(generateUUIDv4(number))), 0, 1
     FROM numbers({rows:UInt64})`,
    { app: APP, rows },
  )
  await store.command(
    `INSERT INTO sessions (app_id, session_uuid, install_uuid, customer_id, started_at, platform)
     SELECT {app:String}, concat('sess-', toString(number)), concat('inst-', toString(number)), concat('cust-', toString(number)),
            fromUnixTimestamp64Milli({at:Int64} - (number % 86400) * 1000, 'UTC'), 'iOS'
     FROM numbers({rows:UInt64})`,
    { app: APP, rows, at: now - HOUR_MS },
  )
  await store.command('OPTIMIZE TABLE devices FINAL')
  await store.insert('audiences', [
    {
      id: 1,
      org_id: 1,
      app_id: APP,
      name: 'bench',
      target_rules: JSON.stringify(rules),
      target_rules_given: '{}',
      created_at: now - DAY_MS,
      updated_at: now - DAY_MS,
      deleted_at: null,
      version: 1,
    },
  ])
  say(`  in ${((performance.now() - t) / 1000).toFixed(1)} s`)
  writeFileSync(marker, JSON.stringify({ v: GENERATOR_VERSION, rows, at: now, hour }))
}

try {
  await migrate(store)
  if (reused) say(`data set of ${rows.toLocaleString('en-US')} rows reused from ${dataDir}`)
  else await generate()
  const job = (id: number, source_type: string, source_id: string, job_type: string) => ({
    id,
    org_id: 1,
    source_type,
    source_id,
    job_type,
    name: 'bench',
    app_id: APP,
    enabled: 1,
    enabled_at: now,
    disabled_at: null,
    created_at: now,
    version: 1,
  })
  await store.insert('export_jobs', [job(1, 'logs', APP, 'logs'), job(2, 'audiences', '1', 'idfa')])

  const writer = exportWriter({
    store,
    files,
    settleMs: 0,
    resultTtlMs: DAY_MS,
    logRetentionMs: 30 * DAY_MS,
    linkTtlMs: HOUR_MS,
    onSkipped: (request, why) => say(`export ${request.export_id} not written: ${why}`),
  })
  let offset = 0
  /** One run of Sluice's writer (an admin refresh: written whatever is on record). */
  const sluiceRun = async (exportId: number, fileHour?: number) => {
    const message = encodeExportRequest({
      v: 1,
      kind: 'generate',
      export_id: exportId,
      ...(fileHour === undefined ? {} : { hour: fileHour }),
      reason: 'admin',
      requested_at: Date.now(),
    })
    const record = {
      topic: 'exports',
      partition: 0,
      offset: String(offset++),
      key: message.key ?? null,
      value: message.value,
      headers: {},
      timestamp: Date.now(),
    }
    await settleMemory()
    const rss = sampleRss()
    const started = performance.now()
    await writer({ topic: 'exports', partition: 0, records: [record] })
    const ms = performance.now() - started
    const growth = await rss.stop()
    const file = await latestFile(store, exportId)
    if (!file) throw new Error(`export ${exportId} wrote no file`)
    return { ms, rows: file.rows, bytes: file.bytes, ...growth }
  }
  /** The engine's own JSONEachRow of the same rows, gzipped into a file. */
  const baselineRun = async (sql: string, params: Record<string, unknown>) => {
    const lines = new LineCount()
    const out = join(dataDir, 'baseline.json.gz')
    await settleMemory()
    const rss = sampleRss()
    const started = performance.now()
    await pipeline(
      store.queryStream(sql, params, 'JSONEachRow'),
      lines,
      createGzip({ level: EXPORT_GZIP_LEVEL, chunkSize: EXPORT_GZIP_CHUNK_BYTES }),
      createWriteStream(out),
    )
    const ms = performance.now() - started
    return { ms, rows: lines.rows, ...(await rss.stop()) }
  }

  const log = logHourQuery(APP, hour)
  const logBaseline = {
    // The stored columns of the same rows (the copies in `row` and `sent_customer_id` left out), in the same order.
    sql: `SELECT * EXCEPT (row, inserted_at, sent_customer_id) FROM raw_log FINAL
          WHERE app_id = {app:String} AND at >= fromUnixTimestamp64Milli({from:Int64}, 'UTC')
            AND at < fromUnixTimestamp64Milli({to:Int64}, 'UTC')
`,
    params: log.params,
  }
  const members = compileMembers(rules, { appId: APP, appProfiledbId: 2, orgProfiledbId: 1, now })
  const { body, settings } = membersSubquery(members.sql)
  const audienceBaseline = { sql: `SELECT * FROM (${body}) SETTINGS ${settings}`, params: members.params }

  const measure = async (
    name: string,
    sluice: () => Promise<Measured & { bytes: number }>,
    baseline: () => Promise<Measured>,
  ) => {
    const ours: (Measured & { bytes: number })[] = []
    const theirs: Measured[] = []
    // One untimed run of each first: code loaded, caches of the engine filled, for both alike.
    say(`${name}: warming up`)
    await sluice()
    await baseline()
    for (let i = 0; i < runs; i++) {
      say(`${name}: Sluice's writer, run ${i + 1} of ${runs}`)
      ours.push(await sluice())
      say(`${name}: the engine's JSONEachRow through gzip, run ${i + 1} of ${runs}`)
      theirs.push(await baseline())
    }
    // The faster run of each; the largest memory growth of Sluice's runs.
    const fastest = <T extends Measured>(all: T[]) => all.reduce((a, b) => (b.ms < a.ms ? b : a))
    return {
      sluice: {
        ...fastest(ours),
        rssGrowthMb: Math.max(...ours.map((m) => m.rssGrowthMb)),
        jsGrowthMb: Math.max(...ours.map((m) => m.jsGrowthMb)),
        engineGrowthMb: Math.max(...ours.map((m) => m.engineGrowthMb)),
      },
      baseline: {
        ...fastest(theirs),
        rssGrowthMb: Math.max(...theirs.map((m) => m.rssGrowthMb)),
        jsGrowthMb: Math.max(...theirs.map((m) => m.jsGrowthMb)),
        engineGrowthMb: Math.max(...theirs.map((m) => m.engineGrowthMb)),
      },
    }
  }
  const logResult = await measure(
    'log export',
    () => sluiceRun(1, hour),
    () => baselineRun(logBaseline.sql, logBaseline.params),
  )
  const audienceResult = await measure(
    'audience export',
    () => sluiceRun(2),
    () => baselineRun(audienceBaseline.sql, audienceBaseline.params),
  )
  process.stdout.write(JSON.stringify({ rows, reused, log: logResult, audience: audienceResult }) + '\n')
} finally {
  await store.close()
  rmSync(filesDir, { recursive: true, force: true })
}

/** Lets the allocator hand back what the previous run freed (JE_MALLOC_CONF dirty_decay_ms:1000). */
function settleMemory(): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, 2500))
}

/**
 * The process's growth over a span, each the largest sample minus the first, in MB: RSS (every
 * 20 ms), Node's heap + external buffers (same samples), and the engine's tracked memory
 * (`MemoryTracking`, every 100 ms on the store's main connection; the export streams on one of its own).
 */
function sampleRss() {
  const js = () => {
    const m = process.memoryUsage()
    return m.heapUsed + m.external
  }
  const tracked = async () => {
    const [row] = await store.query<{ v: number | string }>(
      "SELECT value AS v FROM system.metrics WHERE metric = 'MemoryTracking'",
    )
    return Number(row?.v ?? 0)
  }
  const first = process.memoryUsage.rss()
  const firstJs = js()
  let max = first
  let maxJs = firstJs
  let firstEngine: number | undefined
  let maxEngine = 0
  let polling = true
  const sample = () => {
    max = Math.max(max, process.memoryUsage.rss())
    maxJs = Math.max(maxJs, js())
  }
  const timer = setInterval(sample, 20)
  const engine = (async () => {
    while (polling) {
      const v = await tracked()
      firstEngine ??= v
      maxEngine = Math.max(maxEngine, v)
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
  })()
  const mb = (bytes: number) => Math.round((bytes / 1048576) * 10) / 10
  return {
    async stop() {
      clearInterval(timer)
      sample()
      polling = false
      await engine
      return {
        rssGrowthMb: mb(max - first),
        jsGrowthMb: mb(maxJs - firstJs),
        engineGrowthMb: mb(maxEngine - (firstEngine ?? maxEngine)),
      }
    },
  }
}
