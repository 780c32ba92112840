import { describe, expect, it } from 'vitest'
import { rowPieces } from '../../pipelines/events/store-events.ts'
import type { RowParts, WriterItem } from '../../pipelines/events/writer-item.ts'

const upload = { tx: 'tx', recv: 0, org: 1, source: 'server' as const }

/** An item whose row is whole (a Buffer) or in parts (head, a slice of `source`, tail). */
function item(i: number, row: Buffer | RowParts): WriterItem {
  return { app: 'app', uuid: `u-${i}`, upload, line: i, value: row }
}

function rowBytes(row: Buffer | RowParts): Buffer {
  return Buffer.isBuffer(row)
    ? row
    : Buffer.concat([row.head, row.source.subarray(row.start, row.end), row.tail])
}

/** What a store receives: each piece copied as it comes, before the producer reuses its buffer. */
async function received(items: readonly WriterItem[], pieceBytes: number) {
  const given = rowPieces(items, Buffer.alloc(pieceBytes))
  const pieces: Buffer[] = []
  await given.pieces((piece) => {
    pieces.push(Buffer.from(piece))
    return Promise.resolve()
  })
  return { bytes: given.bytes, pieces }
}

describe('rows handed to the store in pieces', () => {
  const source = Buffer.from('abcdefghijklmnopqrstuvwxyz'.repeat(4))
  const rows: (Buffer | RowParts)[] = Array.from({ length: 40 }, (_, i) =>
    i % 3 === 0
      ? Buffer.from(`whole-${i}-${'w'.repeat(i % 7)}`)
      : { head: Buffer.from(`h${i}`), source, start: i, end: i + 10 + (i % 5), tail: Buffer.from(`t${i}|`) },
  )
  const items = rows.map((row, i) => item(i, row))
  const all = Buffer.concat(rows.map(rowBytes))

  it('gives every row, in order, in pieces no larger than the buffer, each ending at a row end', async () => {
    const { bytes, pieces } = await received(items, 64)
    expect(bytes).toBe(all.length)
    expect(Buffer.concat(pieces).equals(all)).toBe(true)
    expect(pieces.length).toBeGreaterThan(5)
    for (const piece of pieces) expect(piece.length).toBeLessThanOrEqual(64)
    // Row ends: each piece's end is the end of some row.
    const ends = new Set<number>()
    let at = 0
    for (const row of rows) ends.add((at += rowBytes(row).length))
    let end = 0
    for (const piece of pieces) expect(ends.has((end += piece.length))).toBe(true)
  })

  it('gives a row larger than the buffer as a piece of its own', async () => {
    const big = Buffer.from('B'.repeat(100))
    const withBig = [items[0]!, item(99, big), items[1]!]
    const { pieces } = await received(withBig, 32)
    expect(pieces.map((p) => p.toString())).toEqual([
      rowBytes(rows[0]!).toString(),
      big.toString(),
      rowBytes(rows[1]!).toString(),
    ])
  })

  it('gives nothing for no rows', async () => {
    expect(await received([], 64)).toEqual({ bytes: 0, pieces: [] })
  })
})
