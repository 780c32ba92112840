import { copyFile, mkdir, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ClickHouseStore } from '../../pipelines/connectors/store/clickhouse-store.ts'
import { MIGRATIONS_DIR, migrate } from '../../pipelines/connectors/store/migrations.ts'
import { basic } from '../helpers/edge.ts'
import { distributedEnv } from '../helpers/distributed-env.ts'
import { OLD, writeOldControlRows } from '../helpers/old-control-rows.ts'
import { startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'
import { waitFor } from '../helpers/wait-for.ts'

const TOKEN = 'control-dist-admin-token-1'
const headers = { Authorization: `Bearer ${TOKEN}`, 'Content-Type': 'application/json' }

/**
 * Real processes as in production: two `sluice edge` and two `sluice worker` on Kafka (or
 * librdkafka's mock cluster) and ClickHouse (or the chdb-backed stand-in), over a database written
 * by the version before control commands. Admin writes through both edges at once never share an
 * id, and an app id is taken once.
 */
describe('control plane in distributed mode: two edges, two workers', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  let edges: SluiceChild[] = []
  const children: SluiceChild[] = []
  const post = (edge: SluiceChild, path: string, body: unknown) =>
    fetch(`${edge.url}/admin/v1${path}`, { method: 'POST', headers, body: JSON.stringify(body) })

  beforeAll(async () => {
    dir = await tempDir('control-dist')
    const env = {
      ...distributedEnv('control'),
      SLUICE_DATA_DIR: dir.path,
      SLUICE_ADMIN_TOKEN: TOKEN,
      SLUICE_PARTITIONS: '2',
      KAFKA_SESSION_TIMEOUT_MS: '6000',
      SLUICE_KEY_CACHE_SECONDS: '1',
      // The first writes wait out the consumer group's first join and rebalance, and the 200 creates
      // queue behind each other on one partition: on a loaded 2-core machine that took over 30 s.
      SLUICE_CONTROL_WAIT_MS: '90000',
    }
    // The database as the previous version left it: migrations 001-009 and its rows.
    const before = join(dir.path, 'migrations-before')
    await mkdir(before)
    for (const file of await readdir(MIGRATIONS_DIR))
      if (/^00\d_.*\.sql$/.test(file)) await copyFile(join(MIGRATIONS_DIR, file), join(before, file))
    const store = await ClickHouseStore.open({
      url: env.CLICKHOUSE_URL,
      username: env.CLICKHOUSE_USER,
      password: env.CLICKHOUSE_PASSWORD,
      database: env.CLICKHOUSE_DATABASE,
    })
    await migrate(store, before)
    await writeOldControlRows(store)
    await store.close()

    const started = await Promise.allSettled([
      startSluice(env, ['edge']),
      startSluice(env, ['edge']),
      startSluice(env, ['worker']),
      startSluice(env, ['worker']),
    ])
    for (const s of started) if (s.status === 'fulfilled') children.push(s.value)
    for (const s of started) if (s.status === 'rejected') throw s.reason
    edges = children.slice(0, 2)
  })
  afterAll(async () => {
    await Promise.all(children.map((child) => child.stop().catch(() => undefined)))
    await dir?.cleanup()
  })

  it('200 concurrent creates through both edges get 200 distinct ids, after the existing ones', async () => {
    // Both workers have joined the control group once a write through each edge is answered.
    const first = await waitFor(
      () => post(edges[0]!, '/orgs', { name: 'first' }),
      (res) => res.status === 201,
      { what: 'the control plane to answer', timeoutMs: 45_000, intervalMs: 200 },
    )
    expect(await first.json()).toEqual({
      id: OLD.maxOrgId + 1,
      name: 'first',
      profiledb_id: OLD.maxProfileDbId + 1,
    })

    const responses = await Promise.all(
      Array.from({ length: 200 }, (_, i) => post(edges[i % 2]!, '/orgs', { name: `org-${i}` })),
    )
    const bodies = (await Promise.all(responses.map((r) => r.json()))) as {
      id: number
      name: string
      profiledb_id: number
    }[]
    expect(responses.map((r) => r.status)).toEqual(responses.map(() => 201))
    expect(bodies.map((b) => b.name)).toEqual(bodies.map((_, i) => `org-${i}`))
    const ids = bodies.map((b) => b.id).sort((a, b) => a - b)
    expect(ids.every(Number.isInteger)).toBe(true)
    expect(ids).toEqual(Array.from({ length: 200 }, (_, i) => OLD.maxOrgId + 2 + i))
    expect(new Set(bodies.map((b) => b.profiledb_id)).size).toBe(200)

    // Either edge reads every org, the old ones included, once.
    const listed = (await (await fetch(`${edges[1]!.url}/admin/v1/orgs`, { headers })).json()) as {
      id: number
    }[]
    expect(listed.map((o) => o.id)).toEqual([...OLD.orgs.map((o) => o.id), OLD.maxOrgId + 1, ...ids])
  })

  it('one app id taken through both edges at once is one 201 and one 409; an old app id stays taken', async () => {
    const orgId = OLD.orgs[1]!.id
    const both = await Promise.all(
      edges.map((edge, i) => post(edge, `/orgs/${orgId}/apps`, { name: `e${i}`, app_id: 'raced' })),
    )
    expect(both.map((r) => r.status).sort()).toEqual([201, 409])
    const lost = (await both.find((r) => r.status === 409)!.json()) as { error: string }
    expect(lost.error).toBe('app_id raced already exists')
    const won = (await both.find((r) => r.status === 201)!.json()) as { name: string; profiledb_id: number }
    const apps = await (await fetch(`${edges[0]!.url}/admin/v1/orgs/${orgId}/apps`, { headers })).json()
    expect(apps).toEqual([{ app_id: 'raced', org_id: orgId, name: won.name, profiledb_id: won.profiledb_id }])

    const old = await post(edges[1]!, `/orgs/${OLD.app.org_id}/apps`, {
      name: 'again',
      app_id: OLD.app.app_id,
    })
    expect(old.status).toBe(409)
  })

  it('a key written by the old version works on both edges until revoked through one of them', async () => {
    const auth = basic(OLD.key.api_key, OLD.key.api_secret)
    for (const edge of edges) {
      const check = await fetch(`${edge.url}/v1/auth/check`, { headers: auth })
      expect(await check.json()).toEqual({ org_id: OLD.key.org_id, scopes: [...OLD.key.scopes, 'query'] }) // every scope of its time: query too
    }
    const revoke = await fetch(`${edges[0]!.url}/admin/v1/orgs/${OLD.key.org_id}/keys/${OLD.key.api_key}`, {
      method: 'DELETE',
      headers,
    })
    expect(revoke.status).toBe(204)
    expect((await fetch(`${edges[0]!.url}/v1/auth/check`, { headers: auth })).status).toBe(401)
    // The other edge stops accepting it once its cache entry expires (SLUICE_KEY_CACHE_SECONDS).
    await waitFor(
      async () => (await fetch(`${edges[1]!.url}/v1/auth/check`, { headers: auth })).status,
      (status) => status === 401,
      { what: 'the other edge to refuse the revoked key', timeoutMs: 15_000, intervalMs: 250 },
    )
  })
})
