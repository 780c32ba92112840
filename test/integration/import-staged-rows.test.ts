import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BusRecord, ProduceMessage, RecordBatch } from '../../pipelines/connectors/bus/bus.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import {
  encodeImportBlock,
  STAGED_ROW_COLUMNS,
  stagedRow,
  type ImportBlockRow,
} from '../../pipelines/imports/import-blocks.ts'
import { csvRow, parseCsvHeader } from '../../pipelines/imports/profile-rows.ts'
import { encodeCommand, type ProfileCommand } from '../../pipelines/profiles/commands.ts'
import { profileWriter } from '../../pipelines/profiles/profile-writer.ts'
import { validatePatch } from '../../pipelines/profiles/validate-changes.ts'
import { openMigratedChdb } from '../helpers/migrated-chdb.ts'

/**
 * Staged import rows (import_rows) applied by the profile writer in the engine, between the live
 * PATCHes of the same partition: the same results a PATCH of the same changes gives, in order.
 */
const TOPIC = 'test.profile-changes'
const T0 = Date.UTC(2026, 0, 15, 12, 0, 0)
const DB = 7

let store: ChdbStore
let cleanup: () => Promise<void>
beforeAll(async () => {
  ;({ store, cleanup } = await openMigratedChdb('import-staged'))
})
afterAll(() => cleanup())

const patch = (customer: string, body: unknown, at: number): ProfileCommand => {
  const result = validatePatch(body, 'org')
  if (result.kind !== 'ok') throw new Error(`invalid test body: ${JSON.stringify(result)}`)
  return { v: 1, op: 'patch', org: 1, db: DB, app: '', customer, receivedAt: at, changes: result.changes }
}

let offset = 0
const record = (message: ProduceMessage): BusRecord => ({
  topic: TOPIC,
  partition: 0,
  offset: String(offset++),
  key: message.key ?? null,
  value: message.value,
  headers: message.headers ?? {},
  timestamp: T0,
})
const batchOf = (records: BusRecord[]): RecordBatch => ({ topic: TOPIC, partition: 0, records })

const HEADER = ['customer_id', 'plan', 'url', 'tags:set', 'zip:string', 'old', '$email']
const header = (() => {
  const h = parseCsvHeader(HEADER, 'org')
  if (!h.ok) throw new Error(h.reason)
  return h.value
})()

/** Stages CSV rows as the import processor does, and gives the block record naming them. */
async function stagedBlock(importId: string, round: number, block: number, rows: [number, string[]][]) {
  const lines = rows.map(([line, cells]) => {
    const typed = csvRow(header, cells)
    if (!typed.ok) throw new Error(typed.reason)
    const row: ImportBlockRow = { line, customer: typed.customer, changes: typed.changes }
    const staged = stagedRow({ import: importId, round, block }, row)
    if (staged === undefined) throw new Error('row not stageable')
    return staged
  })
  await store.insert('import_rows', Buffer.from(`${lines.join('\n')}\n`), {
    compactColumns: STAGED_ROW_COLUMNS,
  })
  const head = { import: importId, round, block, org: 1, db: DB, app: '', receivedAt: T0 + 1000 }
  return record(encodeImportBlock({ ...head, staged: rows.length }, [], 0))
}

async function profile(customer: string) {
  const rows = await store.query<{
    attributes: string
    attribute_types: Record<string, string>
    email: string
  }>(
    `SELECT attributes, attribute_types, email FROM profiles FINAL
     WHERE profiledb_id = {db:UInt64} AND customer_id = {customer:String}`,
    { db: DB, customer },
  )
  const row = rows[0]
  return (
    row && { attributes: JSON.parse(row.attributes) as unknown, types: row.attribute_types, email: row.email }
  )
}

async function changes(importId: string) {
  const rows = await store.query<{
    customer_id: string
    change_id: string
    updates: string
    deletes: string[]
  }>(
    `SELECT customer_id, change_id, updates, deletes FROM profile_changes FINAL
     WHERE profiledb_id = {db:UInt64} AND startsWith(change_id, {prefix:String}) ORDER BY change_id`,
    { db: DB, prefix: `import:${importId}:` },
  )
  return rows.map((r) => ({ ...r, updates: JSON.parse(r.updates) as unknown }))
}

const blocksOf = async (importId: string) =>
  (
    await store.query<{ block: number; rows: number; applied: number; ignored: number }>(
      `SELECT block, rows, applied, ignored FROM import_blocks FINAL WHERE import_id = {id:String} ORDER BY block`,
      { id: importId },
    )
  ).map((b) => ({
    block: Number(b.block),
    rows: Number(b.rows),
    applied: Number(b.applied),
    ignored: Number(b.ignored),
  }))

describe('staged import rows, applied by the profile writer in the engine', () => {
  it('merge with existing profiles, interleave with PATCHes in order, and log what changed', async () => {
    const write = profileWriter({ store })
    // Existing profiles, written by PATCHes.
    await write(
      batchOf([
        record(
          encodeCommand(patch('s1', { attributes: { old: 1, url: 'a/b é', keep: 'yes', plan: 'free' } }, T0)),
        ),
        record(
          encodeCommand(patch('s3', { attributes: { plan: 'gold', url: 'x/y', tags: ['a', 'b'] } }, T0)),
        ),
      ]),
    )
    // One batch: a PATCH of s1 before the block, the block, a PATCH of s2 after it.
    const block = await stagedBlock('imp-a', 0, 0, [
      // s1: plan changes, url is unchanged (same value, written with other escapes by the engine), old deleted
      [2, ['s1', 'gold', 'a/b é', '', '', '\\N', 'Ann@Example.COM']],
      // s2: a new profile
      [3, ['s2', 'silver', '', 'x|2', '01234', '', '']],
      // s3: every value as it is: ignored
      [4, ['s3', 'gold', 'x/y', 'a|b', '', '', '']],
    ])
    const report = await write(
      batchOf([
        record(encodeCommand(patch('s1', { attributes: { plan: 'basic', live: 1 } }, T0 + 500))),
        block,
        record(encodeCommand(patch('s2', { attributes: { plan: 'platinum' } }, T0 + 2000))),
      ]),
    )
    expect(report.outcomes).toEqual([])

    // The row came after s1's PATCH: its plan wins, the PATCH's other attribute stays.
    expect(await profile('s1')).toEqual({
      attributes: { url: 'a/b é', keep: 'yes', plan: 'gold', live: 1, $email: 'Ann@Example.COM' },
      types: { url: 'string', keep: 'string', plan: 'string', live: 'integer', $email: 'string' },
      email: 'ann@example.com',
    })
    // s2's PATCH came after the row: its plan wins, the row's other attributes stay.
    expect(await profile('s2')).toEqual({
      attributes: { plan: 'platinum', tags: ['x', '2'], zip: '01234' },
      types: { plan: 'string', tags: 'set', zip: 'string' },
      email: '',
    })
    expect(await profile('s3')).toMatchObject({ attributes: { plan: 'gold', url: 'x/y', tags: ['a', 'b'] } })
    expect(await changes('imp-a')).toEqual([
      {
        customer_id: 's1',
        change_id: 'import:imp-a:2',
        updates: { plan: 'gold', $email: 'Ann@Example.COM' },
        deletes: ['old'],
      },
      {
        customer_id: 's2',
        change_id: 'import:imp-a:3',
        updates: { plan: 'silver', tags: ['x', '2'], zip: '01234' },
        deletes: [],
      },
    ])
    expect(await blocksOf('imp-a')).toEqual([{ block: 0, rows: 3, applied: 2, ignored: 1 }])
  })

  it('applies a block once: delivered again, or replayed after a crash before it was marked applied', async () => {
    const write = profileWriter({ store })
    await write(batchOf([record(encodeCommand(patch('r1', { attributes: { n: 1 } }, T0)))]))
    const block = await stagedBlock('imp-b', 3, 1, [
      [10, ['r1', 'gold', '', '', '', '', '']],
      [11, ['r2', 'free', '', '', '', '', '']],
    ])
    await write(batchOf([block]))
    const after = { r1: await profile('r1'), r2: await profile('r2') }
    expect(after.r1?.attributes).toEqual({ n: 1, plan: 'gold' })

    // Delivered again: the block is known applied (import_blocks), nothing is written.
    await write(batchOf([block]))
    // Replayed as if the writer had crashed before marking it: the profiles record the block's
    // offset, so its rows are skipped and counted applied, not applied twice.
    await store.command(
      `ALTER TABLE import_blocks DELETE WHERE import_id = 'imp-b' SETTINGS mutations_sync = 1`,
    )
    await write(batchOf([block]))
    expect({ r1: await profile('r1'), r2: await profile('r2') }).toEqual(after)
    const versions = await store.query<{ customer_id: string; version: number }>(
      `SELECT customer_id, version FROM profiles FINAL WHERE profiledb_id = {db:UInt64} AND customer_id IN ('r1', 'r2')
       ORDER BY customer_id`,
      { db: DB },
    )
    // r1: the PATCH's version, then the row's; r2: the row's only. No replay wrote another.
    expect(versions.map((v) => [v.customer_id, Number(v.version)])).toEqual([
      ['r1', 2],
      ['r2', 1],
    ])
    expect(await blocksOf('imp-b')).toEqual([{ block: 1, rows: 2, applied: 2, ignored: 0 }])
    expect((await changes('imp-b')).map((c) => c.change_id)).toEqual(['import:imp-b:10', 'import:imp-b:11'])
  })

  it('writes a round of customers without profiles straight from the rows, and replays it once', async () => {
    const write = profileWriter({ store })
    const block = await stagedBlock('imp-d', 2, 0, [
      [5, ['n1', 'gold', 'u/v', 'a|b|a', '', '', 'N1@Example.io']],
      // A new profile's delete changes nothing: its profile is written, no change is logged.
      [6, ['n2', '', '', '', '', '\\N', '']],
    ])
    await write(batchOf([block]))
    expect(await profile('n1')).toEqual({
      attributes: { plan: 'gold', url: 'u/v', tags: ['a', 'b'], $email: 'N1@Example.io' },
      types: { plan: 'string', url: 'string', tags: 'set', $email: 'string' },
      email: 'n1@example.io',
    })
    expect(await profile('n2')).toEqual({ attributes: {}, types: {}, email: '' })
    const stored = await store.query<{ customer_id: string; source_offset: string; version: number }>(
      `SELECT customer_id, source_offset, version FROM profiles FINAL
       WHERE profiledb_id = {db:UInt64} AND customer_id IN ('n1', 'n2') ORDER BY customer_id`,
      { db: DB },
    )
    expect(stored.map((r) => [r.customer_id, String(r.source_offset), Number(r.version)])).toEqual([
      ['n1', block.offset, 1],
      ['n2', block.offset, 1],
    ])
    expect(await changes('imp-d')).toEqual([
      {
        customer_id: 'n1',
        change_id: 'import:imp-d:5',
        updates: { plan: 'gold', url: 'u/v', tags: ['a', 'b'], $email: 'N1@Example.io' },
        deletes: [],
      },
    ])
    expect(await blocksOf('imp-d')).toEqual([{ block: 0, rows: 2, applied: 1, ignored: 1 }])
    // Replayed as after a crash before it was marked applied: the profiles exist now, so the rows
    // meet them (recorded at this offset) and are counted applied, not written again.
    await store.command(
      `ALTER TABLE import_blocks DELETE WHERE import_id = 'imp-d' SETTINGS mutations_sync = 1`,
    )
    await write(batchOf([block]))
    expect((await profile('n1'))?.attributes).toEqual({
      plan: 'gold',
      url: 'u/v',
      tags: ['a', 'b'],
      $email: 'N1@Example.io',
    })
    expect(await blocksOf('imp-d')).toEqual([{ block: 0, rows: 2, applied: 2, ignored: 0 }])
    expect(await changes('imp-d')).toHaveLength(1)
  })

  it('retries a block whose staged rows are not all readable yet, rather than marking it applied', async () => {
    const write = profileWriter({ store })
    const block = await stagedBlock('imp-c', 0, 0, [[2, ['m1', 'gold', '', '', '', '', '']]])
    const head = { import: 'imp-c', round: 0, block: 1, org: 1, db: DB, app: '', receivedAt: T0 }
    // A block naming two rows where only one is staged.
    const short = record(encodeImportBlock({ ...head, staged: 2 }, [], 0))
    await expect(write(batchOf([block, short]))).rejects.toThrow(/0 of 2 staged rows found/)
    expect(await blocksOf('imp-c')).toEqual([])
  })
})
