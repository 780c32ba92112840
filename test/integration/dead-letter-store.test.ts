import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BusRecord } from '../../pipelines/connectors/bus/bus.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import {
  DeadLetterStore,
  LIST_VALUE_MAX_BYTES,
  previewOf,
  type DeadLetter,
} from '../../pipelines/failures/dead-letters.ts'
import { tempDir } from '../helpers/temp.ts'

const T0 = Date.UTC(2026, 0, 2, 3, 4, 5)

function letter(offset: number, value: Buffer, extra: Partial<BusRecord> = {}, at = T0): DeadLetter {
  return {
    stage: 'test-stage',
    record: {
      topic: 'test.topic',
      partition: 1,
      offset: String(offset),
      key: null,
      value,
      headers: {},
      timestamp: T0 - 1000,
      ...extra,
    },
    error: `Error: failed at ${offset}`,
    attempts: 3,
    deadAt: at,
  }
}

describe('the dead-letter store against the embedded engine', () => {
  let store: ChdbStore
  let deadLetters: DeadLetterStore
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    const dir = await tempDir('dead-letters')
    store = await ChdbStore.open(dir.path)
    await migrate(store)
    deadLetters = new DeadLetterStore(store)
    cleanup = async () => {
      await store.close()
      await dir.cleanup()
    }
  })
  afterAll(() => cleanup())

  it('keeps any bytes, key, headers and error (lone surrogates made valid), newest first', async () => {
    const binary = Buffer.from([0x00, 0xff, 0xfe, 0x80, 0x0a, 0x41])
    await deadLetters.add([
      letter(10, binary, { key: 'key-\ud800', headers: { h: 'v\udc00', ok: 'yes' } }, T0),
      {
        ...letter(11, Buffer.from('{"text": "é ✓ 😀"}\n'), {}, T0 + 1),
        error: 'RangeError: bad \ud83d here',
      },
    ])
    const list = await deadLetters.list({ limit: 10 })
    expect(list.map((l) => l.offset)).toEqual(['11', '10'])
    const [text, bytes] = list
    expect(bytes).toEqual({
      id: 'test-stage:test.topic:1:10',
      stage: 'test-stage',
      topic: 'test.topic',
      partition: 1,
      offset: '10',
      key: 'key-\ufffd',
      headers: { h: 'v\ufffd', ok: 'yes' },
      error: 'Error: failed at 10',
      attempts: 3,
      produced_at: new Date(T0 - 1000).toISOString(),
      dead_at: new Date(T0).toISOString(),
      replayed_at: null,
      value_bytes: 6,
      value: binary.toString('base64'),
      preview: null,
    })
    expect(Buffer.from(bytes!.value!, 'base64')).toEqual(binary)
    expect(text).toMatchObject({
      key: null,
      error: 'RangeError: bad \ufffd here',
      preview: '{"text": "é ✓ 😀"}\n',
    })
  })

  it('dead-lettering the same record again keeps one row; a replay mark survives a later copy', async () => {
    const first = letter(20, Buffer.from('again'), {}, T0 + 10)
    await deadLetters.add([first])
    await deadLetters.add([{ ...first, deadAt: T0 + 11 }])
    const [row] = await deadLetters.list({ stage: 'test-stage', limit: 1 })
    expect(row).toMatchObject({ offset: '20', dead_at: new Date(T0 + 11).toISOString() })
    await deadLetters.markReplayed(row!, T0 + 20)
    // The batch that dead-lettered it is redelivered after a crash: same row, replay mark kept.
    await deadLetters.add([{ ...first, deadAt: T0 + 12 }])
    const rows = await store.query<{ n: string }>(
      "SELECT count() AS n FROM dead_letters FINAL WHERE id = 'test-stage:test.topic:1:20'",
    )
    expect(Number(rows[0]!.n)).toBe(1)
    expect((await deadLetters.get(row!.id))?.replayed_at).toBe(new Date(T0 + 20).toISOString())
  })

  it('lists a large value as null with its preview; get() returns it whole', async () => {
    const big = Buffer.alloc(LIST_VALUE_MAX_BYTES + 1, 'a')
    await deadLetters.add([letter(30, big, {}, T0 + 30)])
    const [listed] = await deadLetters.list({ stage: 'test-stage', limit: 1 })
    expect(listed).toMatchObject({
      offset: '30',
      value: null,
      value_bytes: big.length,
      preview: 'a'.repeat(1024),
    })
    const whole = await deadLetters.get(listed!.id)
    expect(Buffer.from(whole!.value!, 'base64').equals(big)).toBe(true)
    expect(await deadLetters.get('no-such-id')).toBeUndefined()
    expect(await deadLetters.list({ stage: 'other-stage', limit: 10 })).toEqual([])
  })
})

describe('previewOf', () => {
  it('is the text of printable UTF-8, and null otherwise', () => {
    expect(previewOf(Buffer.from('line 1\n\tline 2\r\n'), 16)).toBe('line 1\n\tline 2\r\n')
    expect(previewOf(Buffer.from([0x61, 0x00, 0x62]), 3)).toBeNull()
    expect(previewOf(Buffer.from([0x61, 0xff]), 2)).toBeNull()
    // A character cut where the preview ends is dropped, not taken for garbage.
    const cut = Buffer.concat([Buffer.alloc(1023, 'x'), Buffer.from('😀')])
    expect(previewOf(cut, cut.length)).toBe('x'.repeat(1023))
  })
})
