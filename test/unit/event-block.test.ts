import { describe, expect, it } from 'vitest'
import { partitionForKey } from '../../pipelines/connectors/bus/bus.ts'
import { blockMessages, decodeBlock, encodeBlock } from '../../pipelines/events/event-block.ts'
import {
  EVENT_COLUMNS,
  eventKey,
  eventRowFromRowBinary,
  rowBinaryEventRow,
} from '../../pipelines/events/event-row.ts'
import { eventRow } from '../helpers/event-rows.ts'
import type { UploadRef } from '../../pipelines/events/writer-item.ts'

const up1: UploadRef = { tx: 'tx-1', recv: 1000, org: 7, source: 'server' }
const up2: UploadRef = { tx: 'tx-2', recv: 2000, org: 7, source: 'sdk' }
const ev = (app: string, uuid: string, line: number, upload: UploadRef) => ({
  app,
  uuid,
  line,
  upload,
  // Bytes of every value: a newline and a zero byte are data in RowBinary, not separators.
  row: rowBinaryEventRow(eventRow(uuid, upload, { app, eventName: 'a\nb\u0000c' })),
})

describe('event blocks', () => {
  it('round-trip: each row comes back with its identity and upload', () => {
    const events = [ev('a', 'u1', 1, up1), ev('a', 'u2', 5, up2), ev('b', 'u1', 2, up1)]
    const items = decodeBlock(encodeBlock(events))
    expect(items.map(({ app, uuid, upload, line }) => ({ app, uuid, upload, line }))).toEqual([
      { app: 'a', uuid: 'u1', upload: { tx: 'tx-1', recv: 1000, org: 7, source: 'server' }, line: 1 },
      { app: 'a', uuid: 'u2', upload: { tx: 'tx-2', recv: 2000, org: 7, source: 'sdk' }, line: 5 },
      { app: 'b', uuid: 'u1', upload: { tx: 'tx-1', recv: 1000, org: 7, source: 'server' }, line: 2 },
    ])
    // One upload object per upload of the block, shared by its events.
    expect(items[0]!.upload).toBe(items[2]!.upload)
    expect(items.map((i) => i.value)).toEqual(events.map((e) => e.row))
    expect(eventRowFromRowBinary(items[1]!.value)).toMatchObject({
      app_id: 'a',
      uuid: 'u2',
      event_name: 'a\nb\u0000c',
    })
  })

  it('reads blocks written before RowBinary, converting their rows', () => {
    const row = eventRow('u-old', up1, { app: 'a' })
    const header = (f?: 1) =>
      JSON.stringify({ ...(f ? { f } : {}), u: [['tx-1', 1000, 7, 'server']], k: [['a', 'u-old', 3, 0]] })
    const compact = Buffer.from(`${header(1)}\n${JSON.stringify(EVENT_COLUMNS.map((c) => row[c]))}\n`)
    const objects = Buffer.from(`${header()}\n${JSON.stringify(row)}\n`)
    for (const block of [compact, objects]) {
      const [item] = decodeBlock(block)
      expect(item).toMatchObject({
        app: 'a',
        uuid: 'u-old',
        upload: { tx: 'tx-1', recv: 1000, org: 7, source: 'server' },
        line: 3,
      })
      expect(item!.value).toEqual(rowBinaryEventRow(row))
    }
  })

  it('routes every event to the partition its app + uuid key owns', () => {
    const events = Array.from({ length: 200 }, (_, i) => ev(`app${i % 3}`, `uuid-${i}`, i + 1, up1))
    const messages = blockMessages(events, 4)
    expect(messages.length).toBeLessThanOrEqual(4)
    let seen = 0
    for (const message of messages) {
      for (const item of decodeBlock(message.value)) {
        expect(message.partition).toBe(partitionForKey(eventKey(item.app, item.uuid), 4, 0))
        seen++
      }
    }
    expect(seen).toBe(200)
  })

  it('refuses a block whose rows do not match its header', () => {
    const block = encodeBlock([ev('a', 'u1', 1, up1), ev('a', 'u2', 2, up1)])
    expect(() => decodeBlock(block.subarray(0, block.length - 1))).toThrow(/do not match/)
    expect(() => decodeBlock(Buffer.concat([block, Buffer.from([0])]))).toThrow(/do not match/)
  })
})

describe('event block size', () => {
  it('splits a partition into blocks of at most the given number of events, in order', () => {
    const events = Array.from({ length: 25 }, (_, i) => ev('a', `u${i}`, i + 1, up1))
    const messages = blockMessages(events, 1, 10)
    expect(messages.map((m) => decodeBlock(m.value).length)).toEqual([10, 10, 5])
    expect(messages.flatMap((m) => decodeBlock(m.value).map((i) => i.uuid))).toEqual(
      events.map((e) => e.uuid),
    )
  })
})
