import { Readable } from 'node:stream'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { Bus } from '../../pipelines/connectors/bus/bus.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { RowBinaryReader } from '../../pipelines/events/row-binary.ts'
import { readReceipt, type ImportJob } from '../../pipelines/imports/import-jobs.ts'
import { runProfileImport, type ProfileImportDeps } from '../../pipelines/imports/profile-import.ts'
import { profileWriter } from '../../pipelines/profiles/profile-writer.ts'
import { localLogTestbed } from '../helpers/local-log-testbed.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { openMigratedChdb } from '../helpers/migrated-chdb.ts'

/**
 * A CSV profile import through the processor and the profile writer, on chdb and the local log:
 * plain lines typed by the engine, the lines it leaves typed in JavaScript (accepted or rejected
 * with their reasons), quoted lines by the CSV parser; the processor failing between two rounds
 * and run again, as a redelivered job is, applies every row once.
 */
const TOPIC = 'test.profile-changes'
const GROUP = 'test-profile-writer'
const DB = 11
const T0 = Date.UTC(2026, 0, 20, 9, 0, 0)
const testbed = localLogTestbed('profile-import-csv', { partitions: 2 })

let store: ChdbStore
let cleanup: () => Promise<void>
beforeAll(async () => {
  ;({ store, cleanup } = await openMigratedChdb('profile-import-csv'))
})
afterAll(() => cleanup())

const BODY = [
  'customer_id,plan,age,renewal:date,tags:set',
  'c1,gold,41,2025-12-31,vip|beta|vip', // the engine's
  'c2,silver,7,2025-12-31T10:00:00Z,a|b', // a date-time: JavaScript's, accepted
  'c3,x,1,2023-02-30,', // JavaScript's: rejected
  'c4,,,,', // rejected: changes nothing
  'c5,bronze,3,,a|2', // a mixed set: JavaScript's, accepted
  'c6,"quoted, plan",9,,', // a quote: the CSV parser from here on
  'c7,plain,2,,',
].join('\n')

async function profile(customer: string) {
  const [row] = await store.query<{ attributes: string }>(
    `SELECT attributes FROM profiles FINAL WHERE profiledb_id = {db:UInt64} AND customer_id = {c:String}`,
    { db: DB, c: customer },
  )
  return row && (JSON.parse(row.attributes) as unknown)
}

describe('CSV profile import, processor and writer', () => {
  it('types plain lines in the engine and the rest in JavaScript, and resumes after a failure without applying a row twice', async () => {
    const log = testbed.openLog(await testbed.tempDir())
    await log.ensureTopics([{ topic: TOPIC, partitions: 2 }])
    const write = profileWriter({ store })
    const consumer = await log.consume({
      group: GROUP,
      topics: [TOPIC],
      handler: async (batch) => {
        const report = await write(batch)
        if (report.outcomes.length > 0) throw new Error(`writer outcomes: ${JSON.stringify(report.outcomes)}`)
      },
    })
    // The real log, failing the second hand-over once (a processor that dies between rounds).
    let produced = 0
    const failing: Bus = {
      kind: log.kind,
      ensureTopics: (topics) => log.ensureTopics(topics),
      produce: async (topic, messages) => {
        if (++produced === 2) throw new Error('processor died')
        await log.produce(topic, messages)
      },
      consume: (options) => log.consume(options),
      partitionCount: (topic) => log.partitionCount(topic),
      lag: (group, topic) => log.lag(group, topic),
      close: () => log.close(),
    }
    const job: ImportJob = {
      v: 1,
      id: 'imp-csv',
      kind: 'profiles',
      org: 1,
      app: '',
      db: DB,
      format: 'csv',
      compression: 'none',
      path: 'imports/imp-csv',
      bytes: BODY.length,
      receivedAt: T0,
    }
    // The real store, noting the lines handed to the engine to type as it reads them.
    const engineLines: number[] = []
    const noting: Store = {
      kind: store.kind,
      command: (sql, params, options) => store.command(sql, params, options),
      query: (sql, params) => store.query(sql, params),
      queryStream: (sql, params, format) => store.queryStream(sql, params, format),
      insert: (table, rows, options) => {
        if (options?.select && Buffer.isBuffer(rows)) {
          expect(table).toBe('import_rows')
          const r = new RowBinaryReader(rows)
          while (!r.done) {
            r.string() // import_id
            r.int64() // round
            r.at += 4 // block
            engineLines.push(r.int64())
            r.string() // the line
          }
        }
        return store.insert(table, rows, options)
      },
      ping: () => store.ping(),
      close: () => store.close(),
    }
    const deps: ProfileImportDeps = {
      store: noting,
      bus: failing,
      open: () => Readable.from([Buffer.from(BODY)]),
      topic: TOPIC,
      partitions: 2,
      writerBacklog: () => log.lag(GROUP, TOPIC),
      sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
      now: () => T0 + 1000,
      roundRows: 2,
      // Called once a round is staged: the rows staged so far, seen from there.
      releaseMemory: async () => {
        const [n] = await store.query<{ n: string }>(
          `SELECT uniqExact(line) AS n FROM import_rows WHERE import_id = {import:String}`,
          { import: job.id },
        )
        staged.push(Number(n?.n))
      },
    }
    const staged: number[] = []
    await expect(runProfileImport(job, deps)).rejects.toThrow('processor died')
    await runProfileImport(job, deps)

    const receipt = await waitFor(
      () => readReceipt(store, 1, job.id),
      (r) => r?.state === 'done',
      { what: 'the import done', timeoutMs: 60_000 },
    )
    await consumer.stop()
    expect(receipt).toMatchObject({ rows_read: 7, rows_applied: 5, rows_ignored: 0, rows_rejected: 2 })
    expect(receipt!.rejected_rows).toEqual([
      { line: 4, customer_id: 'c3', reason: 'renewal: not a valid ISO 8601 date: "2023-02-30"' },
      { line: 5, customer_id: 'c4', reason: 'the row changes no attribute (every cell is empty)' },
    ])
    expect(await profile('c1')).toEqual({
      plan: 'gold',
      age: 41,
      renewal: '2025-12-31',
      tags: ['vip', 'beta'],
    })
    expect(await profile('c2')).toEqual({ plan: 'silver', age: 7, renewal: '2025-12-31', tags: ['a', 'b'] })
    expect(await profile('c5')).toEqual({ plan: 'bronze', age: 3, tags: ['a', '2'] })
    expect(await profile('c6')).toEqual({ plan: 'quoted, plan', age: 9 })
    expect(await profile('c7')).toEqual({ plan: 'plain', age: 2 })
    expect(await profile('c3')).toBeUndefined()
    expect(await profile('c4')).toBeUndefined()
    // Each applied row logged once, by its line.
    const changes = await store.query<{ change_id: string }>(
      `SELECT change_id FROM profile_changes FINAL WHERE profiledb_id = {db:UInt64} ORDER BY change_id`,
      { db: DB },
    )
    expect(changes.map((c) => c.change_id)).toEqual([2, 3, 6, 7, 8].map((line) => `import:imp-csv:${line}`))
    // The plain lines were handed to the engine's typing (the rounds of the failed run again),
    // straight into import_rows: there is no import_raw to go through any more (migration 034).
    expect([...new Set(engineLines)].sort((a, b) => a - b)).toEqual([2, 3, 4, 5, 6])
    const raw = await store.query(
      `SELECT name FROM system.tables WHERE database = currentDatabase() AND name = 'import_raw'`,
    )
    expect(raw).toEqual([])
    // The engine's memory is released after each round's staging (7 rows in rounds of 2, one
    // round staged twice), each time with that round's rows readable.
    expect(staged.length).toBeGreaterThanOrEqual(4)
    expect(staged).toEqual([...staged].sort((a, b) => a - b))
    expect(staged.at(-1)).toBe(5)
  })
})
