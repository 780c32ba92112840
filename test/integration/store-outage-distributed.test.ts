import { createClient } from '@clickhouse/client'
import { inject } from 'vitest'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postSdkTo, sessionRow } from '../helpers/ingestion-scenario.ts'
import { startClickHouseStandin, type ClickHouseStandin } from '../helpers/clickhouse-standin.ts'
import { createTenant, startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { outageMs } from '../helpers/store-outage.ts'
import { tempDir } from '../helpers/temp.ts'
import { exactlyOnceViolations, streamUploads } from '../helpers/upload-stream.ts'
import { waitFor } from '../helpers/wait-for.ts'

const TOKEN = 'outage-dist-admin-token-123'
const APP = 'outage-app'

// The ClickHouse server (a stand-in of this test's own, on its own data directory) is killed under
// a steady load and started again on the same data and port after the outage: the edge keeps
// answering 202 (the bus holds the backlog), the worker retries without dead-lettering, and every
// accepted event is stored once when the server is back. docs/scaling.md reports the drain time.
describe('the ClickHouse server goes away under load and comes back (distributed mode)', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  let standin: ClickHouseStandin
  const children: SluiceChild[] = []
  beforeAll(async () => {
    dir = await tempDir('outage-dist')
    standin = await startClickHouseStandin()
  })
  afterAll(async () => {
    for (const child of children) await child.stop().catch(() => undefined)
    await standin.stop()
    await dir.cleanup()
  })

  it(
    'keeps answering 202, dead-letters nothing and stores every accepted event once after the return',
    { timeout: 400_000 },
    async () => {
      const outage = outageMs()
      const suffix = Math.random().toString(36).slice(2, 8)
      const env = {
        ...inject('kafkaEnv'),
        KAFKA_BROKERS: inject('kafkaBrokers'),
        CLICKHOUSE_URL: standin.url,
        CLICKHOUSE_DATABASE: `sluice_outage_${suffix}`,
        SLUICE_TOPIC_PREFIX: `sluice.outage.${suffix}.`,
        SLUICE_DATA_DIR: dir.path,
        SLUICE_ADMIN_TOKEN: TOKEN,
        SLUICE_PARTITIONS: '4',
        KAFKA_SESSION_TIMEOUT_MS: '6000',
      }
      // Starts get a minute: the machine these run on may be busy.
      const edge = await startSluice(env, ['edge'], 60_000)
      children.push(edge)
      const worker = await startSluice(env, ['worker'], 60_000)
      children.push(worker)
      const { auth } = await createTenant(edge.url, TOKEN, APP)
      const customers = ['c0', 'c1', 'c2']
      await postSdkTo(
        edge.url,
        APP,
        customers.map((c, i) =>
          sessionRow({
            install: `i-${c}`,
            customer: c,
            at: Date.now() - 10_000 + i,
            country: 'fr',
            model: 'm',
          }),
        ),
      )
      const client = () =>
        createClient({ url: standin.url, database: env.CLICKHOUSE_DATABASE, request_timeout: 10_000 })
      const query = async <T>(sql: string) => {
        const c = client()
        try {
          return await (await c.query({ query: sql, format: 'JSONEachRow' })).json<T>()
        } finally {
          await c.close()
        }
      }
      const count = async (sql: string) => Number((await query<{ n: string }>(sql))[0]?.n)
      await waitFor(
        () => count(`SELECT count() AS n FROM events WHERE app_id = '${APP}'`).catch(() => 0),
        (n) => n >= 0,
        { what: 'the events table', timeoutMs: 60_000 },
      )

      // About one body of 23 events a second: steady, and within one worker on a loaded machine.
      const stream = streamUploads({
        url: () => edge.url,
        auth,
        appId: APP,
        customers,
        concurrency: 1,
        paceMs: 1000,
      })
      await waitFor(
        () => count(`SELECT count() AS n FROM events WHERE app_id = '${APP}'`),
        (n) => n > 40,
        { what: 'events stored before the outage', timeoutMs: 120_000 },
      )

      await standin.kill()
      const sentBefore = stream.sent.length
      await new Promise((resolve) => setTimeout(resolve, outage))
      const during = stream.sent.slice(sentBefore)
      standin = await startClickHouseStandin(60_000, { dataDir: standin.dataDir, port: standin.port })
      const back = Date.now()
      // A few more bodies after the return, then the load stops and the backlog drains.
      await new Promise((resolve) => setTimeout(resolve, 2_000))
      await stream.stop()

      // The edge answered every body of the outage 202: it needs nothing of the store to accept.
      expect(during.length).toBeGreaterThanOrEqual(outage / 2000)
      expect(during.filter((b) => b.status !== 202).map((b) => b.status)).toEqual([])

      const accepted = new Set(stream.sent.filter((b) => b.status === 202).flatMap((b) => b.uuids))
      const counts = await waitFor(
        async () => {
          const rows = await query<{ uuid: string; n: string }>(
            `SELECT uuid, count() AS n FROM events WHERE app_id = '${APP}' GROUP BY uuid`,
          ).catch(() => [])
          return new Map(rows.map((r) => [r.uuid, Number(r.n)]))
        },
        (m) => {
          if (process.env.SLUICE_TEST_LOG)
            console.error('stored', m.size, 'of', accepted.size, 'at', Date.now() - back, 'ms')
          return [...accepted].every((id) => m.has(id))
        },
        { what: 'every accepted event stored after the return', timeoutMs: 180_000, intervalMs: 250 },
      )
      const drainMs = Date.now() - back
      console.log(
        `store outage (distributed): ${outage} ms down, ${during.length} bodies accepted meanwhile, ` +
          `${accepted.size} events in all, every one stored ${drainMs} ms after the server returned`,
      )
      expect(exactlyOnceViolations(stream.sent, counts)).toEqual([])
      // An outage is no record's fault: nothing was dead-lettered, and the worker lived through it.
      expect(await count('SELECT count() AS n FROM dead_letters')).toBe(0)
      expect(worker.child.exitCode).toBeNull()
    },
  )
})
