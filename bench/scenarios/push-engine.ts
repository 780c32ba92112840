import { once } from 'node:events'
import { createWriteStream, readdirSync, readFileSync } from 'node:fs'
import { open, rm, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { loadConfig } from '../../services/config.ts'
import { startProcess } from '../../services/processes.ts'
import { createLogger } from '../../services/shared/logger.ts'

/**
 * The push scenario's engine, a child process (chdb binds one data directory per process):
 * argv = data dir, installs. Runs a whole embedded Sluice in this process, puts `installs` devices
 * of one app with push tokens straight into its engine, then posts one broadcast through the edge
 * and watches it go out through the file transport: the time from the 202 to the first line, the
 * deliveries recorded per second, the process's RSS, and the edge's answer time meanwhile. Then the
 * baseline: the same number of the same lines written with a bare Node write stream. Prints one
 * JSON line (progress on stderr).
 */

const [dataDir, installsArg] = process.argv.slice(2)
if (!dataDir || !installsArg) {
  process.stderr.write('usage: push-engine <data dir> <installs>\n')
  process.exit(2)
}
const installs = Number(installsArg)
const APP = 'bench-push'
const TOKEN = 'bench-push-admin-token-0123456789'
const say = (line: string) => process.stderr.write(`${line}\n`)

// The operator's SLUICE_* settings apply, but the send rate is lifted: this measures the pipeline.
const inherited = Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('SLUICE_')))
const config = loadConfig({
  ...inherited,
  SLUICE_DATA_DIR: dataDir,
  HOST: '127.0.0.1',
  PORT: '0',
  SLUICE_SQL_PORT: '0',
  SLUICE_ADMIN_TOKEN: TOKEN,
  SLUICE_PUSH_SEND_RATE_PER_APP: '0',
})
const logger = createLogger('warn', { write: (line: string) => process.stderr.write(line) })
say('starting Sluice')
const running = await startProcess(config, logger, ['edge', 'worker', 'scheduler'])
const url = running.url!
const store = running.runtime.store

async function admin<T>(path: string, body: unknown): Promise<T> {
  const res = await fetch(`${url}/admin/v1${path}`, {
    method: 'POST',
    headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  })
  if (!res.ok) throw new Error(`admin ${path}: ${res.status} ${await res.text()}`)
  return (await res.json()) as T
}

try {
  const org = await admin<{ id: number }>('/orgs', { name: 'bench-push' })
  await admin(`/orgs/${org.id}/apps`, { name: APP, app_id: APP })
  const key = await admin<{ api_key: string; api_secret: string }>(`/orgs/${org.id}/keys`, {})
  const auth = `Basic ${Buffer.from(`${key.api_key}:${key.api_secret}`).toString('base64')}`

  say(`generating ${installs} devices`)
  const genStart = performance.now()
  // Half iOS, half Android, each with a 64-hex-digit token and push enabled, as the SDK would leave them.
  await store.command(
    `INSERT INTO devices (app_id, install_uuid, device_uuid, customer_id, last_active_at, platform, push_token, push_status, version)
     SELECT {app:String}, concat('inst-', leftPad(toString(number), 9, '0')), '', concat('cust-', toString(number)),
            now64(3), if(number % 2 = 0, 'iOS', 'Android'), lower(hex(SHA256(toString(number)))), 'Enabled (Prominent)', 1
     FROM numbers({n:UInt64})`,
    { app: APP, n: installs },
  )
  const deviceGenerationMs = performance.now() - genStart
  // The generating insert leaves the engine's allocator holding hundreds of MB (1M devices: the
  // process at ~1.1 GB, down to ~0.8 GB some seconds later), which the RSS of the fan-out must not
  // be charged with: handed back to the system first, and the RSS before the broadcast reported.
  await store
    .command('SYSTEM JEMALLOC PURGE')
    .catch((err: unknown) => say(`no jemalloc purge: ${String(err)}`))
  const rssBeforeMb = Math.round(process.memoryUsage.rss() / 1048576)

  const file = join(dataDir, 'push', APP, `${new Date().toISOString().slice(0, 10)}.jsonl`)
  const rss: number[] = []
  const edgeMs: number[] = []
  let recorded = 0
  say('broadcast')
  const posted = performance.now()
  const res = await fetch(`${url}/v2/push/${APP}`, {
    method: 'POST',
    headers: { Authorization: auth, 'Content-Type': 'application/json' },
    body: JSON.stringify({
      request_id: 'bench-broadcast',
      campaign_key: 'bench',
      target_type: 'broadcast',
      messages: [
        {
          alert: { title: 'Bench', body: 'One push to every install' },
          ios: { sound: 'default', badge: 1 },
          android: { priority: 'high' },
        },
      ],
    }),
  })
  const accepted = performance.now()
  const cpuAtAccept = process.cpuUsage()
  const threadsAtAccept = threadCpu()
  const hrAtAccept = process.hrtime.bigint() / 1000n
  if (res.status !== 202) throw new Error(`broadcast answered ${res.status}: ${await res.text()}`)

  // The first line: the file appears with bytes in it.
  let firstAt: number | undefined
  while (firstAt === undefined && performance.now() - accepted < 120_000) {
    const size = await stat(file).then(
      (s) => s.size,
      () => 0,
    )
    if (size > 0) firstAt = performance.now()
    else await new Promise((r) => setTimeout(r, 2))
  }

  // Until every install is recorded: deliveries, RSS and the edge's answer time, every 250 ms.
  const deadline = accepted + Math.max(120_000, installs * 2)
  let doneAt = performance.now()
  while (recorded < installs && performance.now() < deadline) {
    rss.push(process.memoryUsage.rss())
    const probe = performance.now()
    const check = await fetch(`${url}/v1/auth/check`, { headers: { Authorization: auth } })
    await check.arrayBuffer()
    edgeMs.push(performance.now() - probe)
    const [row] = await store.query<{ n: number | string }>(
      `SELECT count() AS n FROM push_deliveries WHERE app_id = {app:String} AND request_id = 'bench-broadcast'`,
      { app: APP },
    )
    recorded = Number(row?.n ?? 0)
    doneAt = performance.now()
    if (recorded < installs) await new Promise((r) => setTimeout(r, 250))
    say(`${recorded} of ${installs} deliveries recorded`)
  }
  const fanOutS = (doneAt - accepted) / 1000
  // Every thread of the process (JS, chdb's engine, the file writes), the probe loop included:
  // a figure that survives a busy machine, unlike the wall clock.
  const cpu = process.cpuUsage(cpuAtAccept)
  const threadsAtDone = threadCpu()
  // Where the CPU went, by thread name (the JS main thread is "node-main"; chdb's are named by their pools).
  const byThread = [...threadsAtDone]
    .map(([name, ms]) => [name, ms - (threadsAtAccept.get(name) ?? 0)] as const)
    .filter(([, ms]) => ms > 0)
    .sort((a, b) => b[1] - a[1])
  // The fan-out's window on the monotonic clock in microseconds, as --cpu-prof's samples time it.
  say(`fan-out window (us): ${hrAtAccept} ${process.hrtime.bigint() / 1000n}`)
  say(`CPU by thread (ms): ${byThread.map(([n, ms]) => `${n} ${ms}`).join(', ')}`)
  const fileBytes = (await stat(file)).size

  // Baseline: the same count of the same lines (the first 10,000 of the output, in turn) through a
  // bare write stream into a file of its own, synced at the end as the transport syncs. Three
  // runs, the median: the machine may be busy with other work at any one moment.
  const sample = await firstLines(file, 10_000)
  const bareRuns: number[] = []
  for (let run = 1; run <= 3; run++) {
    say(`baseline: a bare write stream, run ${run} of 3`)
    bareRuns.push(await bareStream(join(dataDir, 'bare-stream.jsonl'), sample, installs))
  }
  const bareS = bareRuns.sort((a, b) => a - b)[1]!

  const deliveriesPerSecond = recorded / fanOutS
  const bareLinesPerSecond = installs / bareS
  process.stdout.write(
    JSON.stringify({
      installs,
      recorded,
      complete: recorded >= installs,
      deviceGenerationMs: Math.round(deviceGenerationMs),
      acceptMs: Math.round(accepted - posted),
      timeToFirstDeliveryMs: firstAt === undefined ? null : Math.round(firstAt - accepted),
      fanOutMs: Math.round(fanOutS * 1000),
      deliveriesPerSecond: Math.round(deliveriesPerSecond),
      bareLinesPerSecond: Math.round(bareLinesPerSecond),
      ratio: deliveriesPerSecond / bareLinesPerSecond,
      cpuByThreadMs: Object.fromEntries(byThread),
      cpuUsPerDelivery: Math.round(((cpu.user + cpu.system) / Math.max(1, recorded)) * 10) / 10,
      fileBytes,
      rssBeforeMb,
      rssMaxMb: Math.round(Math.max(...rss) / 1048576),
      rssMb: rss.map((b) => Math.round(b / 1048576)),
      edgeMs,
    }) + '\n',
  )
} finally {
  await running.shutdown()
}

/** CPU ms of this process's threads so far, summed by thread name (Linux /proc; empty elsewhere). */
function threadCpu(): Map<string, number> {
  const out = new Map<string, number>()
  let tasks: string[]
  try {
    tasks = readdirSync('/proc/self/task')
  } catch {
    return out
  }
  for (const tid of tasks) {
    try {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8')
      const close = stat.lastIndexOf(')')
      let name = stat.slice(stat.indexOf('(') + 1, close).replace(/[0-9]+$/, '')
      // The JS main thread apart from libuv's pool (file writes, fsyncs, chdb's query calls) and
      // V8's helpers, which share its name.
      if (name === 'node') name = tid === String(process.pid) ? 'node-main' : 'node-other'
      const fields = stat.slice(close + 2).split(' ')
      // utime and stime, fields 14 and 15 of stat (11 and 12 after the name), in 10 ms ticks.
      const ms = (Number(fields[11]) + Number(fields[12])) * 10
      out.set(name, (out.get(name) ?? 0) + ms)
    } catch {
      // The thread ended meanwhile.
    }
  }
  return out
}

/** Seconds to write `count` of `lines` in turn through a write stream, and sync the file. */
async function bareStream(path: string, lines: readonly string[], count: number): Promise<number> {
  const start = performance.now()
  const out = createWriteStream(path)
  for (let i = 0; i < count; i++) {
    if (!out.write(lines[i % lines.length]!)) await once(out, 'drain')
  }
  out.end()
  await once(out, 'finish')
  const handle = await open(path, 'r+')
  await handle.sync()
  await handle.close()
  const seconds = (performance.now() - start) / 1000
  await rm(path, { force: true })
  return seconds
}

async function firstLines(path: string, count: number): Promise<string[]> {
  // The output's head is enough: read at most 16 MB of it.
  const handle = await open(path, 'r')
  try {
    const buf = Buffer.alloc(16 * 1024 * 1024)
    const { bytesRead } = await handle.read(buf, 0, buf.length, 0)
    const lines = buf.subarray(0, bytesRead).toString('utf8').split('\n')
    lines.pop()
    return lines.slice(0, count).map((l) => `${l}\n`)
  } finally {
    await handle.close()
  }
}
