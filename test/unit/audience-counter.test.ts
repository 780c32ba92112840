import { describe, expect, it } from 'vitest'
import type { BusRecord } from '../../pipelines/connectors/bus/bus.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { audienceCounter, type CountsRow } from '../../pipelines/audiences/audience-counter.ts'
import { encodeCountRequest, type CountRequest } from '../../pipelines/audiences/count-requests.ts'
import { audienceRefreshJob } from '../../pipelines/audiences/refresh-job.ts'
import type { Bus, ProduceMessage } from '../../pipelines/connectors/bus/bus.ts'

const RULES = JSON.stringify({
  behavior_profile_operator: 'and',
  targeting_type: 'install_id',
  behavior: null,
  profile: null,
})

const audience = (id: number, over: Record<string, unknown> = {}) => ({
  id: String(id),
  org_id: '1',
  app_id: 'app',
  name: `a${id}`,
  target_rules: RULES,
  target_rules_given: RULES,
  created_at: '1000',
  updated_at: '1000',
  deleted_at: null,
  version: String(id * 10),
  ...over,
})

/** A store answering the counter's one read of audiences, and recording inserts. */
function fakeStore(rows: ReturnType<typeof audience>[]) {
  const inserted: { table: string; rows: CountsRow[] }[] = []
  const reads: unknown[] = []
  const store: Store = {
    kind: 'chdb',
    command: () => Promise.resolve(),
    query: <T>(sql: string, params?: Record<string, unknown>) => {
      reads.push(params)
      if (!sql.includes('FROM audiences FINAL')) throw new Error(`unexpected query ${sql}`)
      const ids = (params?.ids as number[]).map(String)
      return Promise.resolve(rows.filter((r) => ids.includes(r.id)) as T[])
    },
    queryStream: () => {
      throw new Error('the counter streams nothing')
    },
    insert: (table, r) => {
      inserted.push({ table, rows: r as CountsRow[] })
      return Promise.resolve()
    },
    ping: () => Promise.resolve(true),
    close: () => Promise.resolve(),
  }
  return { store, inserted, reads }
}

let offset = 0
const record = (request: Partial<CountRequest> | string): BusRecord => ({
  topic: 'audience-counts',
  partition: 0,
  offset: String(offset++),
  key: null,
  value:
    typeof request === 'string'
      ? Buffer.from(request)
      : encodeCountRequest({
          v: 1,
          audience_id: 1,
          org_id: 1,
          app_id: 'app',
          requested_at: 100,
          reason: 'refresh',
          ...request,
        }).value,
  headers: {},
  timestamp: 0,
})

const profileDbs = { profileDbsOf: () => Promise.resolve({ appProfiledbId: 2, orgProfiledbId: 1 }) }

describe('the audience counter', () => {
  it('counts each audience of a batch once, answering its latest request; skips deleted and moved ones', async () => {
    const { store, inserted } = fakeStore([
      audience(1),
      audience(2, { deleted_at: '5000' }),
      audience(3, { app_id: 'another-app' }),
    ])
    const queries: unknown[] = []
    let clock = 50_000
    const counter = audienceCounter({
      store,
      profileDbs,
      clock: { now: () => (clock += 7) },
      countQuery: (sql, params) => {
        queries.push(params)
        expect(sql).toContain('user_count')
        return Promise.resolve({ user_count: 9, has_push: 4, seen_last_thirty: 6 })
      },
    })
    const garbage = record('not json')
    const report = await counter({
      topic: 'audience-counts',
      partition: 0,
      records: [
        record({ audience_id: 1, requested_at: 100 }),
        record({ audience_id: 2 }),
        garbage,
        record({ audience_id: 1, requested_at: 300, reason: 'recompute' }),
        record({ audience_id: 1, requested_at: 200 }),
        record({ audience_id: 3 }),
        record({ audience_id: 4 }),
      ],
    })
    expect(queries).toHaveLength(1)
    expect(Object.values(queries[0] as object)).toContain('app')
    expect(inserted).toEqual([
      {
        table: 'audience_counts',
        rows: [
          {
            audience_id: 1,
            org_id: 1,
            app_id: 'app',
            user_count: 9,
            has_push: 4,
            seen_last_thirty: 6,
            calculated_at: 50_014,
            requested_at: 300,
            audience_version: 10,
            duration_ms: 7,
            version: 50_014,
          },
        ],
      },
    ])
    expect(report?.outcomes).toEqual([
      { record: garbage, outcome: { kind: 'dead-letter', error: expect.any(Error) as unknown } },
    ])
  })

  it('a count that fails is retried (for its records only); the others are written', async () => {
    const { store, inserted } = fakeStore([audience(1), audience(2)])
    const counter = audienceCounter({
      store,
      profileDbs,
      countQuery: (_sql, params) => {
        if (Object.values(params).includes('app') && failNext) {
          failNext = false
          return Promise.reject(new Error('engine busy'))
        }
        return Promise.resolve({ user_count: 1, has_push: 0, seen_last_thirty: 1 })
      },
    })
    let failNext = true
    const first = record({ audience_id: 1 })
    const report = await counter({
      topic: 'audience-counts',
      partition: 0,
      records: [first, record({ audience_id: 2 })],
    })
    expect(report?.outcomes).toEqual([
      { record: first, outcome: { kind: 'retry', error: new Error('engine busy') } },
    ])
    expect(inserted.flatMap((i) => i.rows.map((r) => r.audience_id))).toEqual([2])
  })

  it('an audience of an app that is gone has nothing to count: done, not dead-lettered', async () => {
    const { store, inserted } = fakeStore([audience(1)])
    const counter = audienceCounter({
      store,
      profileDbs: { profileDbsOf: () => Promise.resolve(undefined) },
      countQuery: () => Promise.reject(new Error('not reached')),
    })
    const report = await counter({
      topic: 'audience-counts',
      partition: 0,
      records: [record({ audience_id: 1 })],
    })
    expect(report?.outcomes).toEqual([])
    expect(inserted).toEqual([])
  })

  it('stored rules that no longer parse are dead-lettered, not retried', async () => {
    const { store } = fakeStore([
      audience(1, { target_rules: JSON.stringify({ behavior_profile_operator: 'xor' }) }),
    ])
    const counter = audienceCounter({
      store,
      profileDbs,
      countQuery: () => Promise.reject(new Error('not reached')),
    })
    const r = record({ audience_id: 1 })
    const report = await counter({ topic: 'audience-counts', partition: 0, records: [r] })
    expect(report?.outcomes[0]?.outcome.kind).toBe('dead-letter')
  })
})

describe('the audience refresh job', () => {
  it('only queues one request per live audience, stamped with the period start', async () => {
    const produced: { topic: string; messages: ProduceMessage[] }[] = []
    const bus = {
      produce: (topic: string, messages: ProduceMessage[]) => {
        produced.push({ topic, messages })
        return Promise.resolve()
      },
    } as unknown as Bus
    const job = audienceRefreshJob({ bus, topic: 'counts', intervalMs: 3_600_000 })
    expect(job).toMatchObject({ name: 'audience-counts', intervalMs: 3_600_000 })
    const sql: string[] = []
    const store = {
      query: (q: string) => {
        sql.push(q)
        return Promise.resolve([
          { id: '4', org_id: '1', app_id: 'a' },
          { id: '9', org_id: '2', app_id: 'b' },
        ])
      },
    } as unknown as Store
    expect(await job.run({ store, periodStart: 7_200_000 })).toEqual({ audiences: 2 })
    expect(sql[0]).toContain('deleted_at IS NULL')
    expect(produced).toHaveLength(1)
    expect(produced[0]!.topic).toBe('counts')
    expect(produced[0]!.messages.map((m) => [m.key, JSON.parse(m.value.toString()) as unknown])).toEqual([
      ['4', { v: 1, audience_id: 4, org_id: 1, app_id: 'a', requested_at: 7_200_000, reason: 'refresh' }],
      ['9', { v: 1, audience_id: 9, org_id: 2, app_id: 'b', requested_at: 7_200_000, reason: 'refresh' }],
    ])
  })
})
