import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import { csvRow, jsonRow, parseCsvHeader } from '../../pipelines/imports/profile-rows.ts'
import { jsonMember, normaliseMember } from '../../pipelines/imports/audience-members.ts'
import { STAGED_ROW_COLUMNS, stagedRow } from '../../pipelines/imports/import-blocks.ts'
import { readPlainRows, readRows, type SourceRow } from '../../pipelines/imports/read-rows.ts'

describe('profile import rows', () => {
  it('types CSV cells by the header and the PATCH rules; \\N deletes, empty leaves alone', () => {
    const header = parseCsvHeader(['customer_id', 'n', 'd:date', 's:set', 'z:string', 'gone'], 'org')
    expect(header.ok).toBe(true)
    if (!header.ok) return
    expect(csvRow(header.value, ['c1', '4.9', '2024-02-29T23:00:00+05:00', '1|2|1', '0042', '\\N'])).toEqual({
      ok: true,
      customer: 'c1',
      changes: [
        { index: 1, op: 'assign', attr: 'n', value: { type: 'integer', value: 4 } },
        { index: 2, op: 'assign', attr: 'd', value: { type: 'date', value: '2024-02-29' } },
        { index: 3, op: 'assign', attr: 's', value: { type: 'set', value: [1, 2] } },
        { index: 4, op: 'assign', attr: 'z', value: { type: 'string', value: '0042' } },
        { index: 5, op: 'delete', attr: 'gone' },
      ],
    })
    expect(csvRow(header.value, ['c2', '', '2023-02-30', '', '', ''])).toEqual({
      ok: false,
      customer: 'c2',
      reason: 'd: not a valid ISO 8601 date: "2023-02-30"',
    })
    expect(csvRow(header.value, ['c3', '1'])).toMatchObject({
      ok: false,
      reason: 'the row has 2 cells; the header has 6',
    })
  })

  it('refuses headers without customer_id, with a key twice or a special key at app level', () => {
    expect(parseCsvHeader(['plan'], 'org')).toEqual({
      ok: false,
      reason: 'the header has no customer_id column',
    })
    expect(parseCsvHeader(['customer_id', 'a', 'a:string'], 'org')).toEqual({
      ok: false,
      reason: 'the header names a twice',
    })
    expect(parseCsvHeader(['customer_id', '$email'], 'app').ok).toBe(false)
  })

  it('reads JSON lines in both PATCH syntaxes and rejects a row with any ignored item', () => {
    expect(jsonRow('{"customer_id":"c","changes":[{"op":"increment","attr":"v","value":2}]}', 'org')).toEqual(
      {
        ok: true,
        customer: 'c',
        changes: [{ index: 0, op: 'increment', attr: 'v', by: 2 }],
      },
    )
    expect(jsonRow('{"customer_id":"c","attributes":{"ok":1,"_x":2}}', 'org')).toEqual({
      ok: false,
      customer: 'c',
      reason: "_x: attribute key must not begin with '_'",
    })
    expect(jsonRow('{"attributes":{"a":1}}', 'org')).toMatchObject({
      ok: false,
      reason: 'customer_id is missing',
    })
  })
})

describe('audience import members', () => {
  it('normalises e-mails and UUID install ids as the tables hold them', () => {
    expect(normaliseMember('email', ' Ann@Example.COM ')).toEqual({ ok: true, member: 'ann@example.com' })
    expect(normaliseMember('install_id', '6F1C2A9E3B4D4E5F8A9B0C1D2E3F4A5B')).toEqual({
      ok: true,
      member: '6f1c2a9e-3b4d-4e5f-8a9b-0c1d2e3f4a5b',
    })
    expect(jsonMember('{"email":"x@y.z"}', 'customer_id')).toMatchObject({
      ok: false,
      reason: 'this import lists customer_ids; the line has email',
    })
  })
})

describe('staged import rows', () => {
  const at = { import: 'imp', round: 3, block: 2 }
  it('stages a row that only assigns and deletes, as import_rows holds it', () => {
    const row = jsonRow(
      '{"customer_id":"c1","attributes":{"$email":"Ann@Example.COM","n":4,"tags":["a"],"old":null}}',
      'org',
    )
    if (!row.ok) throw new Error(row.reason)
    const line = stagedRow(at, { line: 7, customer: row.customer, changes: row.changes })
    expect(line).toBeDefined()
    const cells = JSON.parse(line!) as unknown[]
    expect(Object.fromEntries(STAGED_ROW_COLUMNS.map((c, i) => [c, cells[i]]))).toEqual({
      import_id: 'imp',
      round: 3,
      block: 2,
      line: 7,
      customer_id: 'c1',
      updates: '{"$email":"Ann@Example.COM","n":4,"tags":["a"]}',
      update_types: { $email: 'string', n: 'integer', tags: 'set' },
      deletes: ['old'],
      email: 'ann@example.com',
    })
  })

  it('leaves rows whose result depends on the state, or that name an attribute twice, to their block', () => {
    for (const text of [
      '{"customer_id":"c1","changes":[{"op":"increment","attr":"n","value":1}]}',
      '{"customer_id":"c1","changes":[{"op":"set-add","attr":"s","value":"x"}]}',
      '{"customer_id":"c1","changes":[{"op":"assign","attr":"a","value":1},{"op":"delete","attr":"a"}]}',
    ]) {
      const row = jsonRow(text, 'org')
      if (!row.ok) throw new Error(row.reason)
      expect(stagedRow(at, { line: 2, customer: row.customer, changes: row.changes })).toBeUndefined()
    }
  })
})

describe('CSV bodies read as plain lines', () => {
  /** The rows of a body, a plain line as the cells it splits into. */
  async function rowsOf(chunks: Buffer[], plainLines: boolean) {
    const rows: SourceRow[] = []
    const read = plainLines ? readPlainRows : readRows
    for await (const row of read(Readable.from(chunks), 'csv', 'none'))
      rows.push(
        row.kind === 'plain'
          ? { kind: 'cells', line: row.line, cells: row.bytes.toString().split(',') }
          : row,
      )
    return rows
  }

  it('gives the records the CSV parser gives, line numbers included, in any chunking', async () => {
    const body = Buffer.concat([
      Buffer.from([0xef, 0xbb, 0xbf]),
      Buffer.from('customer_id,plan\r\nc1,gold\n\nc2,\\N\r\n'),
      Buffer.from([0x63, 0x33, 0x2c, 0xff, 0x0a]),
      Buffer.from('c4,a;b\n\r\nc5,"two\nlines"\nc6,plain\nc7,last'),
    ])
    const parsed = await rowsOf([body], false)
    expect(parsed.map((r) => r.line)).toEqual([1, 2, 4, 5, 6, 9, 10, 11])
    expect(parsed[6]).toEqual({ kind: 'cells', line: 10, cells: ['c6', 'plain'] })
    for (const size of [1, 2, 3, 7, 64, body.length]) {
      const chunks: Buffer[] = []
      for (let at = 0; at < body.length; at += size) chunks.push(body.subarray(at, at + size))
      expect(await rowsOf(chunks, true), `chunks of ${size}`).toEqual(parsed)
    }
  })

  it('reads a body without a quote as plain lines only', async () => {
    const rows: SourceRow['kind'][] = []
    for await (const row of readPlainRows(
      Readable.from([Buffer.from('customer_id,a\nc1,1\nc2,2')]),
      'csv',
      'none',
    ))
      rows.push(row.kind)
    expect(rows).toEqual(['plain', 'plain', 'plain'])
  })
})
