import { createClient, type ClickHouseClient } from '@clickhouse/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { topology, type Topology } from '../../services/topology.ts'
import { distributedEnv, type DistributedEnv } from '../helpers/distributed-env.ts'
import { longestStall, watchGroups, type GroupSample } from '../helpers/group-progress.ts'
import { postSdkTo, sessionRow } from '../helpers/ingestion-scenario.ts'
import {
  MOCK_KAFKA_ENV,
  MOCK_LEADER_SYNC_DELAY_MS,
  startKafkaMockWithTopics,
  type KafkaMock,
} from '../helpers/kafka-mock.ts'
import { createTenant, startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'
import { exactlyOnceViolations, streamUploads } from '../helpers/upload-stream.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { startDeliveryStandins, type DeliveryStandins } from './push-delivery-scenario.ts'

const TOKEN = 'scale-out-admin-token-123'
const APP = 'scale-app'
const PARTITIONS = 8
/** Kafka's smallest session timeout: a dead worker's partitions move after 6 s. */
const SESSION_TIMEOUT_MS = 6_000
/** A start (module loading, migrations, joining every group) takes ~5 s idle; far more on a loaded machine. */
const START_MS = 90_000
/** Each wait of the scenario: well past what it takes idle, so a loaded machine passes too. */
const STEP_MS = 90_000
/**
 * The load, modest (a correctness test): each edge gets a body of 23 events every PACE_MS, and in
 * all a profile increment every PACE_MS / 2 and a push (8 devices) every PACE_MS * 2. The
 * chdb-backed stand-in is no fast server, so more load only grows the backlog.
 */
const PACE_MS = 4_000
const CUSTOMERS = Array.from({ length: 8 }, (_, i) => `c${i}`)
/** Half the devices on iOS (APNs), half on Android (FCM); APNs tokens are alphanumeric. */
const DEVICES = CUSTOMERS.map((customer, i) => ({
  install: `i-${customer}`,
  customer,
  platform: i % 2 === 0 ? 'iOS' : 'Android',
  token: i % 2 === 0 ? `a0b1c2d3${i}` : `fcm-${customer}`,
}))

const metric = (text: string, name: string, stage: string): number => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`) && l.includes(`stage="${stage}"`))
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(' ') + 1))
}
const metricsOf = async (child: SluiceChild) => (await fetch(`${child.opsUrl}/metrics`)).text()
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// Issue 47 §1, with real processes as in production: 2 `sluice edge` and 1 → 3 → 1 `sluice worker`
// on librdkafka's mock cluster (3 brokers, every topic 8 partitions; KAFKA_BROKERS when set) and
// the run's ClickHouse (the chdb-backed stand-in, or CLICKHOUSE_URL), under a steady load of
// uploads, profile increments and pushes. One worker is killed with SIGKILL while it handles a
// batch, another leaves with SIGTERM. docs/scaling.md says what this shows and a run's figures.
describe('workers scale 1 → 3 → 1 under load, one killed mid-batch (distributed mode)', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  let kafkaMock: KafkaMock | undefined
  let standins: DeliveryStandins
  let client: ClickHouseClient | undefined
  const children: SluiceChild[] = []
  let base: DistributedEnv
  let layout: Topology

  beforeAll(async () => {
    // The run's ClickHouse; Kafka of this file's own, unless KAFKA_BROKERS names one.
    base = distributedEnv('scale')
    layout = topology(base.SLUICE_TOPIC_PREFIX, PARTITIONS)
    dir = await tempDir('scale-out')
    // Topics exist with 8 partitions before any process starts: the mock would auto-create 4.
    ;[kafkaMock, standins] = await Promise.all([
      process.env.KAFKA_BROKERS
        ? Promise.resolve(undefined)
        : startKafkaMockWithTopics(3, Object.values(layout.topics)),
      startDeliveryStandins(),
    ])
  }, 60_000)
  afterAll(async () => {
    if (process.env.SLUICE_TEST_LOG)
      for (const child of children)
        console.error(child.child.spawnargs.slice(-1), child.output().slice(-6000))
    await Promise.all(children.map((child) => child.stop().catch(() => undefined)))
    await client?.close()
    await standins?.close()
    await kafkaMock?.stop()
    await dir?.cleanup()
  })

  it(
    'stores every accepted event and applies every profile write once, sends every push, and no group stalls past the session timeout',
    { timeout: 600_000 },
    async () => {
      const began = Date.now()
      const brokers = kafkaMock?.brokers ?? process.env.KAFKA_BROKERS!.split(',')
      const env = {
        ...base,
        KAFKA_BROKERS: brokers.join(','),
        // On this file's mock: the leader's pause before its SyncGroup (assigner.ts).
        ...(kafkaMock ? MOCK_KAFKA_ENV : {}),
        SLUICE_PARTITIONS: String(PARTITIONS),
        KAFKA_SESSION_TIMEOUT_MS: String(SESSION_TIMEOUT_MS),
        SLUICE_DATA_DIR: dir.path,
        SLUICE_ADMIN_TOKEN: TOKEN,
        SLUICE_PROFILE_RATE_PER_CUSTOMER_PER_MIN: '1000',
        SLUICE_PUSH_RATE_BROADCAST_PER_MINUTE: '1000',
        // One request's fan-out per delivery batch: what a killed sender can send twice.
        SLUICE_PUSH_BATCH_SIZE: String(DEVICES.length),
        // Flows this load does not use: fewer consumer groups to join on a 2-core machine.
        SLUICE_WORKER_SKIP_PIPELINES: 'audiences,exports,campaigns,imports',
        ...standins.env,
        ...(process.env.SLUICE_TEST_LOG ? { SLUICE_LOG_LEVEL: process.env.SLUICE_TEST_LOG } : {}),
      }
      const phases: Record<string, number> = {}
      const mark = (name: string) => {
        phases[name] = Date.now() - began
        if (process.env.SLUICE_TEST_LOG) console.error(`scale-out: ${name} at ${phases[name]} ms`)
      }
      const worker = async () => {
        const w = await startSluice(env, ['worker'], START_MS)
        children.push(w)
        return w
      }
      const edge = async () => {
        const e = await startSluice(env, ['edge'], START_MS)
        children.push(e)
        return e
      }
      const [edgeA, edgeB, w1] = await Promise.all([edge(), edge(), worker()])
      const edges = [edgeA, edgeB]
      mark('started')

      const { auth } = await createTenant(edgeA.url, TOKEN, APP)
      const admin = (path: string, body: unknown) =>
        fetch(`${edgeB.url}/admin/v1${path}`, {
          method: 'PUT',
          headers: { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
        })
      expect(
        (
          await admin(`/apps/${APP}/push/transports/ios`, {
            kind: 'apns',
            settings: {
              key: standins.p8.pem,
              key_id: 'KEY1234567',
              team_id: 'TEAM123456',
              topic: 'com.acme.scale',
            },
          })
        ).status,
      ).toBe(200)
      expect(
        (
          await admin(`/apps/${APP}/push/transports/android`, {
            kind: 'fcm',
            settings: { service_account: standins.account.json },
          })
        ).status,
      ).toBe(200)
      await postSdkTo(
        edgeA.url,
        APP,
        DEVICES.map((d, i) => ({
          ...sessionRow({
            install: d.install,
            customer: d.customer,
            at: Date.now() - 60_000 + i,
            country: 'fr',
            model: 'm',
          }),
          platform: d.platform,
          push_token: d.token,
        })),
      )
      client = createClient({
        url: env.CLICKHOUSE_URL,
        username: env.CLICKHOUSE_USER,
        password: env.CLICKHOUSE_PASSWORD,
        database: env.CLICKHOUSE_DATABASE,
        request_timeout: 30_000,
      })
      const rows = async <T>(query: string) =>
        (await client!.query({ query, format: 'JSONEachRow' })).json<T>()
      const count = async (query: string) => Number((await rows<{ n: string }>(query))[0]?.n)
      await waitFor(
        () => count(`SELECT count() AS n FROM customer_devices FINAL WHERE app_id = '${APP}'`),
        (n) => n === DEVICES.length,
        { what: 'the devices', timeoutMs: STEP_MS, intervalMs: 250 },
      )
      mark('devices')

      // The steady load, through both edges, from here to the end of the scaling.
      const watched = [layout.stages.uploadSplitter, layout.stages.eventsWriter, layout.stages.profileWriter]
      // Work under way in a group: a live worker handling one of its batches.
      const live = [w1]
      const stageOf = new Map(watched.map((s) => [s.group, s.stage]))
      // One look at the live workers' metrics serves every group of a sampling round.
      let look: { at: number; texts: Promise<string[]> } | undefined
      const busy = async (group: string) => {
        if (!look || Date.now() - look.at > 150)
          look = { at: Date.now(), texts: Promise.all(live.map((w) => metricsOf(w).catch(() => ''))) }
        const texts = await look.texts
        return texts.some((t) => metric(t, 'sluice_stage_batches_in_flight', stageOf.get(group)!) > 0)
      }
      const progress = watchGroups(brokers, watched, busy)
      const uploads = edges.map((edge) =>
        streamUploads({
          url: () => edge.url,
          auth,
          appId: APP,
          customers: CUSTOMERS,
          concurrency: 1,
          paceMs: PACE_MS,
        }),
      )
      const increments = new Map<string, number>(CUSTOMERS.map((c) => [c, 0]))
      const pushes: string[] = []
      let loading = true
      const post = (edge: SluiceChild, method: string, path: string, body: unknown) =>
        fetch(`${edge.url}${path}`, {
          method,
          headers: { Authorization: auth, 'Content-Type': 'application/json' },
          body: JSON.stringify(body),
        }).then(
          async (res) => ({ status: res.status, text: await res.text() }),
          () => ({ status: 0, text: '' }),
        )
      const profileLoad = (async () => {
        for (let i = 0; loading; i++) {
          const customer = CUSTOMERS[i % CUSTOMERS.length]!
          const res = await post(edges[i % 2]!, 'PATCH', `/v1/profiles/${customer}`, {
            changes: [{ op: 'increment', attr: 'n', value: 1 }],
          })
          if (res.status === 202) increments.set(customer, increments.get(customer)! + 1)
          await pause(PACE_MS / 2)
        }
      })()
      const pushLoad = (async () => {
        for (let i = 0; loading; i++) {
          const id = `scale-${i}`
          const res = await post(edges[i % 2]!, 'POST', `/v2/push/${APP}`, {
            request_id: id,
            target_type: 'broadcast',
            messages: [{ alert: { title: id, body: 'scale' } }],
          })
          if (res.status === 202) pushes.push(id)
          await pause(PACE_MS * 2)
        }
      })()

      // SLUICE_TEST_LOG: each watched group's backlog every 5 s, to see where a slow run's time went.
      const backlogLog = process.env.SLUICE_TEST_LOG
        ? setInterval(async () => {
            const lags = watched.map((s) => {
              const now = progress.latest(s.group)
              const lag = now ? now.ends.reduce((sum, end, p) => sum + end - (now.committed[p] ?? 0), 0) : '?'
              return `${s.stage} ${lag}`
            })
            const texts = await Promise.all(live.map((w) => metricsOf(w).catch(() => '')))
            const writer = texts.map((t) => {
              const sum = metric(t, 'sluice_stage_duration_seconds_sum', 'events-writer')
              const n = metric(t, 'sluice_stage_duration_seconds_count', 'events-writer')
              return `${n} batches, ${n ? Math.round((1000 * sum) / n) : 0} ms each`
            })
            console.error(
              `scale-out: ${Date.now() - began} ms, backlog ${lags.join(', ')}; events writer ${writer.join(' | ')}`,
            )
          }, 5_000).unref()
        : undefined

      // One worker, then three: each new worker takes partitions and does work of its own.
      await waitFor(
        () => count(`SELECT count() AS n FROM events WHERE app_id = '${APP}'`),
        (n) => n >= 20,
        { what: 'events stored by one worker', timeoutMs: STEP_MS, intervalMs: 500 },
      )
      mark('scale up')
      const [w2, w3] = await Promise.all([worker(), worker()])
      live.push(w2, w3)
      mark('three started')
      for (const w of [w2, w3])
        await waitFor(
          () => metricsOf(w),
          (text) =>
            metric(text, 'sluice_stage_records_total', 'events-writer') > 0 &&
            metric(text, 'sluice_stage_records_total', 'upload-splitter') > 0,
          { what: 'a new worker writing events of its own partitions', timeoutMs: STEP_MS, intervalMs: 250 },
        )
      mark('three working')

      // SIGKILL of one of them while it handles a batch (its in-flight gauge says so).
      const killedIn = await waitFor(
        async () => {
          const text = await metricsOf(w3)
          return ['events-writer', 'upload-splitter', 'profile-writer'].find(
            (stage) => metric(text, 'sluice_stage_batches_in_flight', stage) > 0,
          )
        },
        (stage) => stage !== undefined,
        { what: 'the third worker mid-batch', timeoutMs: STEP_MS, intervalMs: 10 },
      )
      live.splice(live.indexOf(w3), 1)
      await w3.kill9()
      mark('kill -9')
      // The group moves the dead worker's partitions once its session has expired: every
      // partition of the events writer commits past where it was, or has nothing left.
      const caughtUp = async (since: GroupSample | undefined, what: string) => {
        const group = layout.stages.eventsWriter.group
        await waitFor(
          async () => progress.latest(group),
          (now) =>
            now !== undefined &&
            now.committed.every((c, p) => c > (since?.committed[p] ?? -1) || c >= now.ends[p]!),
          { what, timeoutMs: STEP_MS, intervalMs: 250 },
        )
      }
      await caughtUp(
        progress.latest(layout.stages.eventsWriter.group),
        "the killed worker's partitions taken over",
      )
      mark('taken over')
      // Back to one: the second leaves gracefully (finishes and commits its batches).
      expect(await w2.stop()).toBe(0)
      live.splice(live.indexOf(w2), 1)
      mark('SIGTERM')
      await caughtUp(progress.latest(layout.stages.eventsWriter.group), 'one worker on every partition')
      mark('one worker')

      loading = false
      await Promise.all([...uploads.map((u) => u.stop()), profileLoad, pushLoad])
      mark('load stopped')
      const sent = uploads.flatMap((u) => u.sent)
      const accepted = new Set(sent.filter((b) => b.status === 202).flatMap((b) => b.uuids))
      const counts = await waitFor(
        async () =>
          new Map(
            (
              await rows<{ uuid: string; n: string }>(
                `SELECT uuid, count() AS n FROM events WHERE app_id = '${APP}' GROUP BY uuid`,
              )
            ).map((r) => [r.uuid, Number(r.n)]),
          ),
        (m) => [...accepted].every((id) => m.has(id)),
        { what: 'every accepted event stored', timeoutMs: STEP_MS, intervalMs: 500 },
      )
      mark('drained')
      clearInterval(backlogLog)
      await progress.stop()

      // Every accepted event stored exactly once, nothing dead-lettered.
      expect(sent.filter((b) => b.status !== 202).map((b) => b.status)).toEqual([])
      expect(accepted.size).toBeGreaterThan(100)
      expect(exactlyOnceViolations(sent, counts)).toEqual([])

      // Every profile increment applied once: the counter is the number of 202s, and the change log
      // holds one row each.
      const expected = Object.fromEntries(increments)
      const profiles = await waitFor(
        () =>
          Promise.all(
            CUSTOMERS.map(async (c) => {
              const res = await fetch(`${edgeB.url}/v1/profiles/${c}`, { headers: { Authorization: auth } })
              const body = (await res.json()) as { attributes?: { n?: number } }
              return [c, body.attributes?.n ?? 0] as const
            }),
          ),
        (got) => got.every(([c, n]) => n >= expected[c]!),
        { what: 'every profile write applied', timeoutMs: STEP_MS, intervalMs: 500 },
      )
      expect(Object.fromEntries(profiles)).toEqual(expected)
      const changes = await rows<{ customer_id: string; n: string }>(
        `SELECT customer_id, count() AS n FROM profile_changes FINAL GROUP BY customer_id ORDER BY customer_id`,
      )
      expect(Object.fromEntries(changes.map((r) => [r.customer_id, Number(r.n)]))).toEqual(expected)

      // Every push recorded once per device, and received by APNs or FCM; a repeat on the wire is
      // only what the killed sender had sent and not yet recorded (one delivery batch), under the
      // same apns-id.
      const deliveries = await waitFor(
        () =>
          rows<{ request_id: string; install_uuid: string; status: string; n: string }>(
            `SELECT request_id, install_uuid, any(status) AS status, count() AS n FROM push_deliveries
             WHERE app_id = '${APP}' GROUP BY request_id, install_uuid`,
          ),
        (r) => r.length >= pushes.length * DEVICES.length,
        { what: 'every push recorded', timeoutMs: STEP_MS, intervalMs: 500 },
      )
      expect(pushes.length).toBeGreaterThan(3)
      expect(deliveries.filter((d) => Number(d.n) !== 1 || d.status !== 'sent')).toEqual([])
      expect(new Set(deliveries.map((d) => `${d.request_id} ${d.install_uuid}`)).size).toBe(
        pushes.length * DEVICES.length,
      )
      const wire = new Map<string, number>()
      const apnsIds = new Map<string, Set<string>>()
      for (const r of standins.apns.received) {
        const key = `${(r.body as { aps: { alert: { title: string } } }).aps.alert.title} ${r.token}`
        wire.set(key, (wire.get(key) ?? 0) + 1)
        apnsIds.set(key, (apnsIds.get(key) ?? new Set()).add(r.headers['apns-id'] ?? ''))
      }
      for (const r of standins.fcm.received) {
        const message = r.body.message as { token: string; notification: { title: string } }
        const key = `${message.notification.title} ${message.token}`
        wire.set(key, (wire.get(key) ?? 0) + 1)
      }
      const missing = pushes.flatMap((id) =>
        DEVICES.filter((d) => !wire.has(`${id} ${d.token}`)).map((d) => `${id} ${d.token}`),
      )
      expect(missing).toEqual([])
      const repeats = [...wire].filter(([, n]) => n > 1)
      expect(repeats.length).toBeLessThanOrEqual(DEVICES.length)
      expect([...apnsIds.values()].filter((ids) => ids.size !== 1)).toEqual([])
      expect(await count('SELECT count() AS n FROM dead_letters')).toBe(0)

      // No consumer group stalled, for all the joining, leaving and dying, past the session timeout.
      const stalls = Object.fromEntries(
        watched.map((s) => [s.stage, longestStall(progress.samples.get(s.group)!)]),
      )
      console.log(
        `scale-out: ${accepted.size} events from ${sent.length} bodies, ${pushes.length} pushes × ${DEVICES.length} devices ` +
          `(${repeats.length} sent twice), ${[...increments.values()].reduce((a, b) => a + b, 0)} profile increments; ` +
          `worker killed in ${killedIn}; phases (ms from start) ${JSON.stringify(phases)}; longest stall per group (ms): ` +
          JSON.stringify(
            Object.fromEntries(
              Object.entries(stalls).map(([stage, s]) => [
                stage,
                { ms: s.ms, from: s.from - began, to: s.to - began },
              ]),
            ),
          ) +
          `; ${Date.now() - began} ms in all`,
      )
      // The bound: the session timeout, plus, on librdkafka's mock, what it adds to every rebalance
      // of a group with members: its hold (session timeout - 1 s; real Kafka completes a rebalance
      // once the live members have rejoined) and the leader's pause before its SyncGroup
      // (KAFKA_LEADER_SYNC_DELAY_MS, assigner.ts). docs/scaling.md.
      const mockHold = kafkaMock ? SESSION_TIMEOUT_MS - 1_000 + MOCK_LEADER_SYNC_DELAY_MS : 0
      for (const [, s] of Object.entries(stalls)) expect(s.ms).toBeLessThan(SESSION_TIMEOUT_MS + mockHold)
      // No consumer of the workers that lived crashed: the groups settled without restarts.
      for (const w of [w1, w2]) expect(w.output()).not.toMatch(/consumer crashed/)
      expect(w1.child.exitCode).toBeNull()
    },
  )
})
