import { createClient } from '@clickhouse/client'
import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { createTenant, startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'
import { waitFor } from '../helpers/wait-for.ts'

const TOKEN = 'import-crash-admin-token-1234'
const CUSTOMERS = 1500
/** A start on a busy 2-core machine (Kafka, the engine and the other tests share it) may take a while. */
const START_MS = 120_000

// Real processes on Kafka (or librdkafka's mock cluster) and ClickHouse (or the chdb stand-in):
// the worker applying a profile import is killed with SIGKILL mid-import and a new one takes over.
describe('kill -9 of the worker applying a profile import, distributed mode', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  const children: SluiceChild[] = []
  beforeAll(async () => {
    dir = await tempDir('import-crash')
  })
  afterAll(async () => {
    for (const child of children) await child.stop().catch(() => undefined)
    await dir.cleanup()
  })

  it('applies every row exactly once after the worker is replaced', { timeout: 900_000 }, async () => {
    const env = {
      ...distributedEnv('importcrash'),
      SLUICE_DATA_DIR: dir.path,
      SLUICE_ADMIN_TOKEN: TOKEN,
      SLUICE_PARTITIONS: '4',
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      // Small rounds, so the kill lands between rounds as well as within one.
      SLUICE_IMPORT_ROUND_ROWS: '300',
    }
    const edge = await startSluice(env, ['edge'], START_MS)
    children.push(edge)
    let worker = await startSluice(env, ['worker'], START_MS)
    children.push(worker)
    const { auth } = await createTenant(edge.url, TOKEN, 'import-crash-app')
    const client = createClient({
      url: env.CLICKHOUSE_URL,
      username: env.CLICKHOUSE_USER,
      password: env.CLICKHOUSE_PASSWORD,
      database: env.CLICKHOUSE_DATABASE,
    })
    const rowsOf = async <T>(query: string, params: Record<string, unknown> = {}) =>
      (await client.query({ query, format: 'JSONEachRow', query_params: params })).json<T>()

    // Every customer twice: an attributes row (applied in the engine), then, later in the file,
    // an increment (the changes syntax: applied by the writer against the state it meets). An
    // increment applied twice, or a row lost, shows in the profile.
    const lines: string[] = []
    for (let i = 0; i < CUSTOMERS; i++)
      lines.push(JSON.stringify({ customer_id: `k${i}`, attributes: { plan: `p${i % 5}`, seen: i } }))
    for (let i = 0; i < CUSTOMERS; i++)
      lines.push(
        JSON.stringify({
          customer_id: `k${i}`,
          changes: [{ op: 'increment', attr: 'n', value: 1 + (i % 3) }],
        }),
      )
    const sent = await fetch(`${edge.url}/v1/imports/profiles`, {
      method: 'POST',
      headers: { Authorization: auth, 'Content-Type': 'application/x-ndjson', 'Content-Encoding': 'gzip' },
      body: gzipSync(`${lines.join('\n')}\n`),
    })
    expect(sent.status).toBe(202)
    const { import_id: id } = (await sent.json()) as { import_id: string }
    const receipt = async () =>
      (await (
        await fetch(`${edge.url}/v1/imports/${id}`, { headers: { Authorization: auth } })
      ).json()) as Record<string, unknown>

    // Kill the worker once some blocks are applied and the import is still being read.
    const before = await waitFor(
      () => receipt(),
      (r) => Number(r.rows_applied) > 0 || r.state === 'done',
      { what: 'import under way', timeoutMs: 120_000, intervalMs: 100 },
    )
    expect(before.state).not.toBe('done')
    await worker.kill9()
    worker = await startSluice(env, ['worker'], START_MS)
    children.push(worker)

    const done = await waitFor(
      () => receipt(),
      (r) => r.state === 'done' || r.state === 'failed',
      { what: `import ${id} done after the restart`, timeoutMs: 420_000, intervalMs: 500 },
    ).catch((err: unknown) => {
      throw new Error(`${(err as Error).message}\nworker:\n${worker.output().slice(-4000)}`)
    })
    expect(done).toMatchObject({
      state: 'done',
      rows_read: 2 * CUSTOMERS,
      rows_applied: 2 * CUSTOMERS,
      rows_ignored: 0,
      rows_rejected: 0,
    })

    const profiles = await rowsOf<{ customer_id: string; attributes: string }>(
      `SELECT customer_id, attributes FROM profiles FINAL WHERE startsWith(customer_id, 'k') AND deleted = 0`,
    )
    expect(profiles.length).toBe(CUSTOMERS)
    const wrong = profiles.filter((p) => {
      const i = Number(p.customer_id.slice(1))
      const a = JSON.parse(p.attributes) as Record<string, unknown>
      return a.plan !== `p${i % 5}` || a.seen !== i || a.n !== 1 + (i % 3) || Object.keys(a).length !== 3
    })
    expect(wrong).toEqual([])
    // Each row's change in the change log, once: one change_id per line.
    const changes = await rowsOf<{ lines: string; rows: string }>(
      `SELECT uniqExact(change_id) AS lines, count() AS rows FROM profile_changes FINAL
       WHERE startsWith(change_id, {prefix:String})`,
      { prefix: `import:${id}:` },
    )
    expect(changes.map((c) => [Number(c.lines), Number(c.rows)])).toEqual([[2 * CUSTOMERS, 2 * CUSTOMERS]])
    await client.close()
  })
})
