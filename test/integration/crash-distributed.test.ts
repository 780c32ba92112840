import { createClient } from '@clickhouse/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { postSdkTo, sessionRow } from '../helpers/ingestion-scenario.ts'
import { createTenant, startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'
import { exactlyOnceViolations, streamUploads } from '../helpers/upload-stream.ts'
import { waitFor } from '../helpers/wait-for.ts'

const TOKEN = 'crash-dist-admin-token-123'

// Real processes, as in production: `sluice edge` and `sluice worker` on Kafka (or librdkafka's
// mock cluster) and ClickHouse (or the chdb-backed stand-in). The worker is killed mid-batch.
describe('kill -9 of a worker in distributed mode while uploads stream in', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  const children: SluiceChild[] = []
  beforeAll(async () => {
    dir = await tempDir('crash-dist')
  })
  afterAll(async () => {
    for (const child of children) await child.stop().catch(() => undefined)
    await dir.cleanup()
  })

  it(
    'stores every event answered 202 exactly once after the worker is replaced',
    { timeout: 240_000 },
    async () => {
      const env = {
        ...distributedEnv('crash'),
        SLUICE_DATA_DIR: dir.path,
        SLUICE_ADMIN_TOKEN: TOKEN,
        SLUICE_PARTITIONS: '4',
        KAFKA_SESSION_TIMEOUT_MS: '6000',
      }
      const edge = await startSluice(env, ['edge'])
      children.push(edge)
      let worker = await startSluice(env, ['worker'])
      children.push(worker)

      const { auth } = await createTenant(edge.url, TOKEN, 'crash-app')
      const customers = ['c0', 'c1', 'c2', 'c3']
      await postSdkTo(
        edge.url,
        'crash-app',
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
      const client = createClient({
        url: env.CLICKHOUSE_URL,
        username: env.CLICKHOUSE_USER,
        password: env.CLICKHOUSE_PASSWORD,
        database: env.CLICKHOUSE_DATABASE,
      })
      const count = async (sql: string) =>
        Number(
          (await (await client.query({ query: sql, format: 'JSONEachRow' })).json<{ n: string }>())[0]?.n,
        )
      await waitFor(
        () => count('SELECT count() AS n FROM customer_devices FINAL'),
        (n) => n === customers.length,
        {
          what: 'devices',
          timeoutMs: 60_000,
        },
      )

      const stream = streamUploads({
        url: () => edge.url,
        auth,
        appId: 'crash-app',
        customers,
        maxBodies: 80,
      })
      // Kill the worker once it has stored some events and while more are arriving.
      await waitFor(
        () => count("SELECT count() AS n FROM events WHERE app_id = 'crash-app'"),
        (n) => n > 100,
        {
          what: 'events stored before the crash',
          timeoutMs: 60_000,
        },
      )
      await worker.kill9()
      await waitFor(
        async () => stream.sent.filter((b) => b.status === 202).length,
        (n) => n >= 40,
        { what: 'more uploads' },
      )
      worker = await startSluice(env, ['worker'])
      children.push(worker)
      await stream.stop()
      const accepted = stream.sent.filter((b) => b.status === 202)
      const acceptedUuids = new Set(accepted.flatMap((b) => b.uuids))

      const counts = await waitFor(
        async () => {
          const rows = await (
            await client.query({
              query: "SELECT uuid, count() AS n FROM events WHERE app_id = 'crash-app' GROUP BY uuid",
              format: 'JSONEachRow',
            })
          ).json<{ uuid: string; n: string }>()
          return new Map(rows.map((r) => [r.uuid, Number(r.n)]))
        },
        (m) => {
          if (process.env.SLUICE_TEST_LOG)
            console.error('stored', m.size, 'of', acceptedUuids.size, worker.output().slice(-2000))
          return [...acceptedUuids].every((id) => m.has(id))
        },
        { what: 'every accepted event stored', timeoutMs: 90_000, intervalMs: 500 },
      )
      expect(exactlyOnceViolations(stream.sent, counts)).toEqual([])
      await client.close()
    },
  )
})
