import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BusRecord, RecordBatch } from '../../pipelines/connectors/bus/bus.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { encodeCommand, type ProfileCommand } from '../../pipelines/profiles/commands.ts'
import { profileWriter } from '../../pipelines/profiles/profile-writer.ts'
import { validatePatch } from '../../pipelines/profiles/validate-changes.ts'
import { openMigratedChdb } from '../helpers/migrated-chdb.ts'

const TOPIC = 'test.profile-changes'
const T0 = Date.UTC(2024, 0, 15, 12, 0, 0)

let store: ChdbStore
let cleanup: () => Promise<void>
beforeAll(async () => {
  ;({ store, cleanup } = await openMigratedChdb('profile-writer'))
})
afterAll(() => cleanup())

let nextDb = 100
/** A fresh profile db per test, so tests never see each other's rows. */
const freshDb = () => nextDb++

function patch(db: number, customer: string, body: unknown, at = T0): ProfileCommand {
  const result = validatePatch(body, 'org')
  if (result.kind !== 'ok') throw new Error(`invalid test body: ${JSON.stringify(result)}`)
  return { v: 1, op: 'patch', org: 1, db, app: '', customer, receivedAt: at, changes: result.changes }
}
const deleteProfile = (db: number, customer: string, at = T0): ProfileCommand => ({
  v: 1,
  op: 'delete-profile',
  org: 1,
  db,
  app: '',
  customer,
  receivedAt: at,
})

function batch(partition: number, firstOffset: number, commands: (ProfileCommand | Buffer)[]): RecordBatch {
  const records: BusRecord[] = commands.map((command, i) => {
    const message = Buffer.isBuffer(command) ? { key: 'x', value: command } : encodeCommand(command)
    return {
      topic: TOPIC,
      partition,
      offset: String(firstOffset + i),
      key: message.key ?? null,
      value: message.value,
      headers: {},
      timestamp: T0,
    }
  })
  return { topic: TOPIC, partition, records }
}

async function profileOf(db: number, customer: string) {
  const rows = await store.query<{
    attributes: string
    deleted: number
    version: number
    source_offset: number
  }>(
    `SELECT attributes, deleted, version, source_offset FROM profiles FINAL
     WHERE profiledb_id = {db:UInt64} AND customer_id = {customer:String}`,
    { db, customer },
  )
  const row = rows[0]
  return row && { ...row, attributes: JSON.parse(row.attributes) as unknown }
}

async function changesOf(db: number) {
  const rows = await store.query<{
    customer_id: string
    change_id: string
    updates: string
    deletes: string[]
    profile_deleted: number
    ignored: string
    at: number
  }>(
    `SELECT customer_id, change_id, updates, deletes, profile_deleted, ignored, toUnixTimestamp64Milli(at) AS at
     FROM profile_changes FINAL WHERE profiledb_id = {db:UInt64} ORDER BY seq`,
    { db },
  )
  return rows.map((r) => ({
    ...r,
    at: Number(r.at),
    updates: JSON.parse(r.updates) as unknown,
    ignored: JSON.parse(r.ignored) as unknown,
  }))
}

describe('profile writer', () => {
  it('applies each customer’s requests in offset order and logs every change', async () => {
    const db = freshDb()
    const write = profileWriter({ store, now: () => T0 + 5000 })
    await write(
      batch(0, 0, [
        patch(db, 'ann', { attributes: { plan: 'gold', visits: 1, tags: ['a'] } }, T0),
        patch(db, 'bob', { changes: [{ op: 'increment', attr: 'visits', value: 5 }] }, T0 + 1),
        patch(
          db,
          'ann',
          {
            changes: [
              { op: 'increment', attr: 'visits', value: 2 },
              { op: 'set-add', attr: 'tags', value: 'b' },
            ],
          },
          T0 + 2,
        ),
        patch(db, 'ann', { attributes: { plan: null } }, T0 + 3),
      ]),
    )
    expect(await profileOf(db, 'ann')).toEqual({
      attributes: { visits: 3, tags: ['a', 'b'] },
      deleted: 0,
      version: 1,
      source_offset: 3,
    })
    expect(await profileOf(db, 'bob')).toEqual({
      attributes: { visits: 5 },
      deleted: 0,
      version: 1,
      source_offset: 1,
    })
    expect(await changesOf(db)).toEqual([
      {
        customer_id: 'ann',
        change_id: `${TOPIC}:0:0`,
        updates: { plan: 'gold', visits: 1, tags: ['a'] },
        deletes: [],
        profile_deleted: 0,
        ignored: [],
        at: T0,
      },
      {
        customer_id: 'bob',
        change_id: `${TOPIC}:0:1`,
        updates: { visits: 5 },
        deletes: [],
        profile_deleted: 0,
        ignored: [],
        at: T0 + 1,
      },
      {
        customer_id: 'ann',
        change_id: `${TOPIC}:0:2`,
        updates: { visits: 3, tags: ['a', 'b'] },
        deletes: [],
        profile_deleted: 0,
        ignored: [],
        at: T0 + 2,
      },
      {
        customer_id: 'ann',
        change_id: `${TOPIC}:0:3`,
        updates: {},
        deletes: ['plan'],
        profile_deleted: 0,
        ignored: [],
        at: T0 + 3,
      },
    ])

    // The next batch continues from the stored state.
    await write(
      batch(0, 4, [patch(db, 'ann', { changes: [{ op: 'increment', attr: 'visits', value: 10 }] }, T0 + 4)]),
    )
    expect(await profileOf(db, 'ann')).toMatchObject({
      attributes: { visits: 13, tags: ['a', 'b'] },
      version: 2,
      source_offset: 4,
    })
  })

  it('a replayed batch changes nothing: increments count once', async () => {
    const db = freshDb()
    const write = profileWriter({ store })
    const b = batch(1, 0, [
      patch(db, 'c', { changes: [{ op: 'increment', attr: 'n', value: 1 }] }),
      patch(db, 'c', { changes: [{ op: 'increment', attr: 'n', value: 1 }] }),
    ])
    await write(b)
    await write(b)
    // A batch that overlaps the applied offsets applies only the new records.
    await write(
      batch(1, 1, [
        patch(db, 'c', { changes: [{ op: 'increment', attr: 'n', value: 1 }] }),
        patch(db, 'c', { changes: [{ op: 'increment', attr: 'n', value: 100 }] }),
      ]),
    )
    expect(await profileOf(db, 'c')).toMatchObject({ attributes: { n: 102 }, version: 2, source_offset: 2 })
    expect((await changesOf(db)).map((c) => [c.change_id, c.updates])).toEqual([
      [`${TOPIC}:1:0`, { n: 1 }],
      [`${TOPIC}:1:1`, { n: 2 }],
      [`${TOPIC}:1:2`, { n: 102 }],
    ])
  })

  it('a bus whose offsets restarted is not mistaken for a replay', async () => {
    const db = freshDb()
    const write = profileWriter({ store })
    await write(
      batch(0, 0, [
        patch(db, 'r', { attributes: { n: 1 } }, T0),
        patch(db, 'r', { changes: [{ op: 'increment', attr: 'n', value: 1 }] }, T0 + 10),
      ]),
    )
    // Offsets 0 and 1 again, but received later: new requests, applied.
    await write(
      batch(0, 0, [patch(db, 'r', { changes: [{ op: 'increment', attr: 'n', value: 5 }] }, T0 + 20)]),
    )
    expect(await profileOf(db, 'r')).toMatchObject({ attributes: { n: 7 }, source_offset: 0, version: 2 })
    // A true replay of those offsets (received no later than what was applied) is still skipped.
    await write(
      batch(0, 0, [patch(db, 'r', { changes: [{ op: 'increment', attr: 'n', value: 5 }] }, T0 + 20)]),
    )
    expect(await profileOf(db, 'r')).toMatchObject({ attributes: { n: 7 }, version: 2 })
  })

  it('a crash between the change log and the profile write converges on replay, without duplicate log rows', async () => {
    const db = freshDb()
    let failNext = true
    const flaky: Store = Object.assign(Object.create(store) as Store, {
      insert: async (table: string, rows: readonly object[] | Buffer) => {
        if (table === 'profiles' && failNext) {
          failNext = false
          throw new Error('crash before the profile write')
        }
        return store.insert(table, rows)
      },
      query: store.query.bind(store),
    })
    const write = profileWriter({ store: flaky })
    const b = batch(2, 0, [
      patch(db, 'c', { attributes: { n: 10 } }),
      patch(db, 'c', { changes: [{ op: 'increment', attr: 'n', value: 5 }] }),
    ])
    await expect(write(b)).rejects.toThrow('crash before the profile write')
    await write(b)
    expect(await profileOf(db, 'c')).toMatchObject({ attributes: { n: 15 }, version: 1 })
    const raw = await store.query<{ n: number }>(
      'SELECT count() AS n FROM profile_changes FINAL WHERE profiledb_id = {db:UInt64}',
      { db },
    )
    expect(Number(raw[0]!.n)).toBe(2)
    expect((await changesOf(db)).map((c) => c.updates)).toEqual([{ n: 10 }, { n: 15 }])
  })

  it('deletes a profile in order with the other requests', async () => {
    const db = freshDb()
    const write = profileWriter({ store })
    await write(
      batch(0, 0, [
        patch(db, 'd', { attributes: { a: 1, b: 'x' } }),
        deleteProfile(db, 'd'),
        patch(db, 'd', { attributes: { c: 2 } }),
        deleteProfile(db, 'gone'),
      ]),
    )
    expect(await profileOf(db, 'd')).toMatchObject({ attributes: { c: 2 }, deleted: 0 })
    // A delete of a profile that never existed (and has no auto-profile to hide) leaves no row
    // and logs nothing (issue 12).
    expect(await profileOf(db, 'gone')).toBeUndefined()
    expect(
      (await changesOf(db)).map((c) => [c.customer_id, c.updates, c.deletes, c.profile_deleted]),
    ).toEqual([
      ['d', { a: 1, b: 'x' }, [], 0],
      ['d', {}, ['a', 'b'], 1],
      ['d', { c: 2 }, [], 0],
    ])
    await write(batch(0, 4, [deleteProfile(db, 'd')]))
    expect(await profileOf(db, 'd')).toMatchObject({ attributes: {}, deleted: 1, version: 2 })
  })

  it('a delete of a profile the SDK has seen leaves a deleted row that hides its auto-profile', async () => {
    // An org (profile db `orgDb`) with one app (profile db `appDb`) whose SDK has seen 'seen'.
    const orgDb = freshDb()
    const appDb = freshDb()
    const otherAppDb = freshDb()
    const orgId = 9_000 + orgDb
    const app = `app-${appDb}`
    await store.insert('apps', [
      { app_id: app, org_id: orgId, name: 'a', profiledb_id: appDb, created_at: T0, version: 1 },
    ])
    await store.insert('customer_devices', [
      { app_id: app, customer_id: 'seen', install_uuid: 'i', last_active_at: T0, version: 1 },
    ])
    const del = (db: number, appId: string, customer: string) => ({
      ...deleteProfile(db, customer),
      org: orgId,
      app: appId,
    })
    const write = profileWriter({ store })
    await write(
      batch(0, 0, [
        del(orgDb, '', 'seen'),
        del(orgDb, '', 'never-seen'),
        del(appDb, app, 'seen'),
        del(otherAppDb, 'another-app', 'seen'),
      ]),
    )
    expect(await profileOf(orgDb, 'seen')).toMatchObject({ attributes: {}, deleted: 1 })
    expect(await profileOf(orgDb, 'never-seen')).toBeUndefined()
    expect(await profileOf(appDb, 'seen')).toMatchObject({ attributes: {}, deleted: 1 })
    expect(await profileOf(otherAppDb, 'seen')).toBeUndefined()
    for (const db of [orgDb, appDb, otherAppDb]) expect(await changesOf(db)).toEqual([])
  })

  it('records changes the state refuses, applies the others', async () => {
    const db = freshDb()
    const ignored: unknown[] = []
    const write = profileWriter({ store, onIgnored: (_c, list, id) => ignored.push({ id, list }) })
    await write(
      batch(3, 0, [
        patch(db, 'e', { attributes: { name: 'Ann' } }),
        patch(db, 'e', {
          changes: [
            { op: 'increment', attr: 'name', value: 1 },
            { op: 'assign', attr: 'x', value: 1 },
          ],
        }),
        patch(db, 'e', { changes: [{ op: 'set-add', attr: 'name', value: ['y'] }] }),
      ]),
    )
    expect(await profileOf(db, 'e')).toMatchObject({ attributes: { name: 'Ann', x: 1 } })
    const refusedIncrement = {
      index: 0,
      attr: 'name',
      op: 'increment',
      reason: 'increment applies to integer attributes only; name is a string',
    }
    const refusedSetAdd = {
      index: 0,
      attr: 'name',
      op: 'set-add',
      reason: 'set-add applies to sets only; name is a string',
    }
    expect((await changesOf(db)).map((c) => [c.updates, c.ignored])).toEqual([
      [{ name: 'Ann' }, []],
      [{ x: 1 }, [refusedIncrement]],
      [{}, [refusedSetAdd]],
    ])
    expect(ignored).toEqual([
      { id: `${TOPIC}:3:1`, list: [refusedIncrement] },
      { id: `${TOPIC}:3:2`, list: [refusedSetAdd] },
    ])
  })

  it('skips a record that does not decode, and applies the rest', async () => {
    const db = freshDb()
    const undecodable: string[] = []
    const write = profileWriter({
      store,
      onUndecodable: (r, reason) => undecodable.push(`${r.offset}: ${reason}`),
    })
    const report = await write(
      batch(0, 0, [
        Buffer.from('not json'),
        Buffer.from(JSON.stringify({ v: 9 })),
        patch(db, 'f', { attributes: { ok: 1 } }),
      ]),
    )
    expect(undecodable).toEqual(['0: record is not JSON', '1: unknown record version 9'])
    // Reported as dead letters, so the guard keeps them (with why) in the dead-letter store.
    expect(
      report.outcomes.map(({ record, outcome }) => [
        record.offset,
        outcome.kind,
        outcome.kind === 'dead-letter' ? (outcome.error as Error).message : '',
      ]),
    ).toEqual([
      ['0', 'dead-letter', 'undecodable profile command: record is not JSON'],
      ['1', 'dead-letter', 'undecodable profile command: unknown record version 9'],
    ])
    expect(await profileOf(db, 'f')).toMatchObject({ attributes: { ok: 1 } })
  })
})
