import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { RowBinaryWriter } from '../../pipelines/events/row-binary.ts'
import { stagedRow } from '../../pipelines/imports/import-blocks.ts'
import { csvRow, parseCsvHeader } from '../../pipelines/imports/profile-rows.ts'
import { plainLineCustomer, RAW_COLUMNS, typingStatement } from '../../pipelines/imports/staged-csv.ts'
import { openMigratedChdb } from '../helpers/migrated-chdb.ts'

/**
 * CSV lines typed by the engine (staged-csv.ts) against the JavaScript rules (profile-rows.ts) on
 * the same cells: every row the engine stages is one JavaScript accepts, with the same attributes
 * (values, types, order), deletes and e-mail; the rows it leaves are JavaScript's to type.
 */
let store: ChdbStore
let cleanup: () => Promise<void>
beforeAll(async () => {
  ;({ store, cleanup } = await openMigratedChdb('import-csv-typing'))
})
afterAll(() => cleanup())

const HEADER = ['customer_id', 'a', 's:string', 'i:integer', 'd:date', 't:set', '$email', '$full_name', 'b']
const header = (() => {
  const h = parseCsvHeader(HEADER, 'org')
  if (!h.ok) throw new Error(h.reason)
  return h.value
})()

// Cells near every rule's edges (none holds a comma, a quote or a line break: plain lines).
const VALUES = [
  '',
  '\\N',
  'gold',
  '41',
  '41.9',
  '-3',
  '+5',
  '-0.5',
  '007',
  '123456789012345',
  '1234567890123456',
  '9007199254740993',
  '123456789.999999',
  '1234567890.5',
  '1.99999999999999999',
  '2024-02-29',
  '2023-02-29',
  '2023-02-30',
  '2023-13-01',
  '2025-12-31T10:00:00Z',
  '1899-12-31',
  '0000-01-01',
  '2024-02-29x',
  ' padded',
  'padded ',
  '   ',
  'x'.repeat(255),
  'x'.repeat(256),
  'é'.repeat(100),
  'naïve café',
  'José',
  'Zoë',
  '\u00a0nbsp',
  'ideographic\u3000',
  '\u0085nel',
  '\ufeffbom',
  'ls\u2028',
  '\u0001ctl',
  'a/b\\c',
  'tab\tinside',
  'x|y',
  'Ann Lee',
]
const SETS = [
  '',
  '\\N',
  'vip|beta|vip',
  '1|2|1',
  '0|10|010',
  '1|a',
  '01|2',
  '+1|2',
  '-1|-1',
  '[1]',
  'a||b',
  '|',
  ' a|b',
  'a| b',
  'x',
  '9007199254740993|1',
  '123456789012345|1',
  `${'y'.repeat(255)}|z`,
  `${'y'.repeat(256)}|z`,
]
const EMAILS = [
  '',
  '\\N',
  'User@Example.COM',
  'bad',
  'a@b',
  'x@y.z',
  "o'neil+tag@mail.example.org",
  '@x.y',
  `${'a'.repeat(64)}@x.io`,
  `${'a'.repeat(65)}@x.io`,
  'a@-x.io',
  'a@x.io ',
  'ü@x.io',
]

function cellsOf(r: number): string[] {
  const pick = (list: readonly string[], k: number) => list[(r * (k + 1) + 3 * k) % list.length]!
  return [
    `cust-${r}`,
    pick(VALUES, 0),
    pick(VALUES, 1),
    pick(VALUES, 2),
    pick(VALUES, 3),
    pick(SETS, 4),
    pick(EMAILS, 5),
    pick(VALUES, 6),
    pick(VALUES, 7),
  ]
}

/** Each value alone in each column (beside a plain integer in another, so the row changes something). */
function singles(): string[][] {
  const rows: string[][] = []
  const lists = [VALUES, VALUES, VALUES, VALUES, SETS, EMAILS, VALUES, VALUES]
  for (const [k, list] of lists.entries())
    for (const value of list) {
      const cells = Array.from({ length: 9 }, () => '')
      cells[0] = `single-${rows.length}`
      cells[k + 1] = value
      cells[k === 7 ? 3 : 8] = '7'
      rows.push(cells)
    }
  return rows
}

/** Rows a plain import gives in the usual case: the engine must type these itself. */
const PLAIN: string[][] = [
  ['p1', 'gold', '0042', '41', '2024-02-29', 'vip|beta|vip', 'User@Example.COM', 'Ann Lee', '7'],
  ['p2', '', '', '', '', '', '', '', '\\N'],
  ['p3', '-5', 'x', '12', '1999-12-31', '3|1|3', '\\N', '', '2024-01-01'],
]

interface Staged {
  line: string
  customer_id: string
  updates: string
  update_types: Record<string, string>
  deletes: string[]
  email: string
}

describe('CSV lines typed by the engine', () => {
  it('stages only rows JavaScript accepts, typed exactly as JavaScript types them', async () => {
    const rows = [...PLAIN, ...singles(), ...Array.from({ length: 600 }, (_, r) => cellsOf(r))]
    const importId = 'typing-test'
    const writer = new RowBinaryWriter()
    for (const [i, cells] of rows.entries()) {
      const bytes = Buffer.from(cells.join(','))
      expect(plainLineCustomer(bytes, header)).toBe(cells[0])
      writer.string(importId)
      writer.uint(0, 8)
      writer.uint(0, 4)
      writer.uint(i + 2, 8)
      writer.stringBytes(bytes, 0, bytes.length)
    }
    // Typed as the engine reads them, straight into import_rows.
    await store.insert('import_rows', writer.view(), {
      rowBinary: RAW_COLUMNS,
      select: typingStatement(header),
    })
    const staged = await store.query<Staged>(
      `SELECT line, customer_id, updates, update_types, deletes, email FROM import_rows FINAL
       WHERE import_id = {import:String} ORDER BY line`,
      { import: importId },
    )
    const byLine = new Map(staged.map((s) => [Number(s.line), s]))
    // The usual rows are the engine's; so are many of the generated ones.
    for (const line of [2, 3, 4]) expect(byLine.has(line)).toBe(true)
    expect(staged.length).toBeGreaterThan(120)
    let left = 0
    for (const [i, cells] of rows.entries()) {
      const line = i + 2
      const js = csvRow(header, cells)
      const engine = byLine.get(line)
      if (!engine) {
        left++
        continue
      }
      expect(js, `line ${line}: ${cells.join(',')}`).toMatchObject({ ok: true })
      if (!js.ok) continue
      const [, , , , customer, updates, types, deletes, email] = JSON.parse(
        stagedRow(
          { import: importId, round: 0, block: 0 },
          { line, customer: js.customer, changes: js.changes },
        )!,
      ) as [string, number, number, number, string, string, Record<string, string>, string[], string]
      const what = `line ${line}: ${cells.join(',')}`
      expect(engine.customer_id, what).toBe(customer)
      const engineUpdates = JSON.parse(engine.updates) as Record<string, unknown>
      expect(engineUpdates, what).toEqual(JSON.parse(updates))
      expect(Object.keys(engineUpdates), what).toEqual(Object.keys(JSON.parse(updates) as object))
      expect(engine.update_types, what).toEqual(types)
      expect(engine.deletes, what).toEqual(deletes)
      expect(engine.email, what).toBe(email)
    }
    // What the engine leaves includes every row JavaScript rejects.
    const rejected = rows.filter((cells) => !csvRow(header, cells).ok).length
    expect(rejected).toBeGreaterThan(0)
    expect(left).toBeGreaterThanOrEqual(rejected)
    expect(byLine.get(2)).toMatchObject({
      customer_id: 'p1',
      update_types: {
        a: 'string',
        s: 'string',
        i: 'integer',
        d: 'date',
        t: 'set',
        $email: 'string',
        $full_name: 'string',
        b: 'integer',
      },
      deletes: [],
      email: 'user@example.com',
    })
    expect(JSON.parse(byLine.get(2)!.updates)).toEqual({
      a: 'gold',
      s: '0042',
      i: 41,
      d: '2024-02-29',
      t: ['vip', 'beta'],
      $email: 'User@Example.COM',
      $full_name: 'Ann Lee',
      b: 7,
    })
    expect(byLine.get(3)).toMatchObject({ updates: '{}', update_types: {}, deletes: ['b'] })
    expect(JSON.parse(byLine.get(4)!.updates)).toEqual({
      a: -5,
      s: 'x',
      i: 12,
      d: '1999-12-31',
      t: [3, 1],
      b: '2024-01-01',
    })
  })

  it('finds the customer_id cell of a plain line, or none when the line has another number of cells', () => {
    const h = parseCsvHeader(['plan', 'customer_id', 'age'], 'org')
    if (!h.ok) throw new Error(h.reason)
    expect(plainLineCustomer(Buffer.from('gold,c1,4'), h.value)).toBe('c1')
    expect(plainLineCustomer(Buffer.from(',c2,'), h.value)).toBe('c2')
    expect(plainLineCustomer(Buffer.from('gold,c1'), h.value)).toBeUndefined()
    expect(plainLineCustomer(Buffer.from('gold,c1,4,5'), h.value)).toBeUndefined()
    const last = parseCsvHeader(['plan', 'customer_id'], 'org')
    if (!last.ok) throw new Error(last.reason)
    expect(plainLineCustomer(Buffer.from('gold,c9'), last.value)).toBe('c9')
  })
})
