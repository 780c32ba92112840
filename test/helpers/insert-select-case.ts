import { expect } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { RowBinaryWriter } from '../../pipelines/events/row-binary.ts'

/**
 * One case for every store (chdb, a ClickHouse server or its stand-in): an insert whose rows a
 * SELECT makes of the RowBinary rows sent, with query parameters, lands the SELECT's rows.
 */
export async function insertsThroughASelect(store: Store): Promise<void> {
  await store.command(
    'CREATE TABLE t_selected (id UInt32, word String, tagged String) ENGINE = MergeTree ORDER BY id',
  )
  const w = new RowBinaryWriter()
  for (const [id, line] of [
    [1, "a,o'c"],
    [2, 'b,x'],
    [3, 'c,y'],
  ] as const) {
    w.uint(id, 4)
    w.string(line)
  }
  await store.insert('t_selected', Buffer.from(w.view()), {
    rowBinary: [
      ['id', 'UInt32'],
      ['line', 'String'],
    ],
    select: {
      columns: ['id', 'word', 'tagged'],
      sql: (rows) =>
        `SELECT id * 10, splitByChar(',', line)[2], concat({tag:String}, splitByChar(',', line)[1])
         FROM ${rows} WHERE id != {skip:UInt32}`,
      params: { tag: "t'", skip: 2 },
    },
  })
  const rows = await store.query<{ id: number; word: string; tagged: string }>(
    'SELECT id, word, tagged FROM t_selected ORDER BY id',
  )
  expect(rows).toEqual([
    { id: 10, word: "o'c", tagged: "t'a" },
    { id: 30, word: 'y', tagged: "t'c" },
  ])
  // A SELECT reads RowBinary rows only.
  await expect(
    store.insert('t_selected', [{ id: 4 }], {
      select: { columns: ['id'], sql: (rows) => `SELECT 1 FROM ${rows}` },
    }),
  ).rejects.toThrow('RowBinary rows')
}
