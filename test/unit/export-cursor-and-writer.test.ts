import { Readable } from 'node:stream'
import { describe, expect, it } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import type { ExportJobRow } from '../../pipelines/exports/export-commands.ts'
import { membersSubquery, profileChangesQuery } from '../../pipelines/exports/export-queries.ts'
import type { ExportFileRow } from '../../pipelines/exports/export-records.ts'
import { exportTarget } from '../../pipelines/exports/export-targets.ts'
import { exportWriter, writtenAtOf } from '../../pipelines/exports/export-writer.ts'
import { LocalFiles } from '../../pipelines/connectors/files/local-files.ts'
import { tempDir } from '../helpers/temp.ts'
import { decodeExportRequest, encodeExportRequest } from '../../pipelines/exports/generation-requests.ts'

const job: ExportJobRow = {
  id: 7,
  org_id: 1,
  source_type: 'profiles',
  source_id: '10',
  job_type: 'profile_changes',
  name: 'profiles of org 1',
  app_id: '',
  enabled: 1,
  enabled_at: 0,
  disabled_at: null,
  created_at: 0,
  version: 1,
}

/** A store that answers the cursor and "inserted after as_of?" look-ups of a changes export. */
function changesStore(state: { cursor: number; newestInsert: number }): Store {
  return {
    kind: 'chdb',
    command: () => Promise.resolve(),
    query: <T>(sql: string, params: Record<string, unknown> = {}) => {
      if (sql.includes('FROM export_cursors')) return Promise.resolve([{ cursor: state.cursor }] as T[])
      if (sql.includes('FROM profile_changes'))
        return Promise.resolve([{ n: state.newestInsert > Number(params.asOf) ? 1 : 0 }] as T[])
      throw new Error(`unexpected query ${sql}`)
    },
    queryStream: () => Readable.from([]),
    insert: () => Promise.resolve(),
    ping: () => Promise.resolve(true),
    close: () => Promise.resolve(),
  }
}

const file = (over: Partial<ExportFileRow>): ExportFileRow => ({
  export_id: 7,
  org_id: 1,
  file_key: 'changes',
  path: 'exports/1/7/changes-20260601T120000000Z.jsonl.gz',
  rows: 3,
  bytes: 90,
  as_of: 5000,
  range_from: 0,
  generated_at: 5000,
  expire_at: 10_000,
  ...over,
})

describe('the profile_changes cursor', () => {
  it('a file holds the changes after the cursor up to its as_of', async () => {
    const state = { cursor: 1000, newestInsert: 900 }
    const target = (await exportTarget(changesStore(state), job))!
    expect(target.fileKey).toBe('changes')
    const { query, rangeFrom } = await target.query(5000)
    expect(rangeFrom).toBe(1000)
    expect(query).toEqual(profileChangesQuery(10, 1000, 5000))
    expect(query.sql).toMatch(/inserted_at > fromUnixTimestamp64Milli\(\{from:Int64\}/)
    expect(query.sql).toMatch(/inserted_at <= fromUnixTimestamp64Milli\(\{to:Int64\}/)
  })

  it('the file on record is served again until it is fetched whole; then the next starts after it', async () => {
    const state = { cursor: 0, newestInsert: 4000 }
    const target = (await exportTarget(changesStore(state), job))!
    const written = file({ range_from: 0, as_of: 5000 })
    expect(await target.isStale(undefined)).toBe(true)
    // Requested, not fetched (or cut off mid-download): the same changes, nothing lost.
    expect(await target.isStale(written)).toBe(false)
    // Fetched whole: the cursor moved to its as_of, so the file is spent.
    state.cursor = 5000
    expect(await target.isStale(written)).toBe(true)
    expect((await target.query(8000)).rangeFrom).toBe(5000)
    // The next file, not fetched yet: fresh until a change is inserted after it.
    const next = file({ range_from: 5000, as_of: 8000 })
    expect(await target.isStale(next)).toBe(false)
    state.newestInsert = 8001
    expect(await target.isStale(next)).toBe(true)
  })
})

describe('export writer pieces', () => {
  it('reads when a file was written from its name', () => {
    expect(writtenAtOf('exports/1/7/full-20260601T120000123Z.jsonl.gz')).toBe(
      Date.UTC(2026, 5, 1, 12, 0, 0, 123),
    )
    expect(writtenAtOf('exports/1/7/hour2026060111-20260601T121500000Z.log.gz')).toBe(
      Date.UTC(2026, 5, 1, 12, 15),
    )
    expect(writtenAtOf('exports/1/7/whatever.jsonl.gz')).toBeUndefined()
  })

  it('takes the audience member query apart for a subquery', () => {
    const { body, settings } = membersSubquery(
      'SELECT d.install_uuid AS install_uuid FROM (x) AS d WHERE 1 ORDER BY install_uuid SETTINGS join_use_nulls = 0, precise_float_parsing = 1',
    )
    expect(body).toBe('SELECT d.install_uuid AS install_uuid FROM (x) AS d WHERE 1')
    expect(settings).toBe('join_use_nulls = 0, precise_float_parsing = 1')
    expect(membersSubquery('SELECT 1 LIMIT {p3:UInt64} ')).toEqual({
      body: 'SELECT 1 LIMIT {p3:UInt64} ',
      settings: '',
    })
  })

  it('encodes requests keyed by export, and dead-letters what does not decode', () => {
    const message = encodeExportRequest({
      v: 1,
      kind: 'generate',
      export_id: 7,
      hour: Date.UTC(2026, 5, 1, 11),
      reason: 'hourly',
      requested_at: 1,
    })
    expect(message.key).toBe('export:7')
    expect(decodeExportRequest(message)).toEqual({
      ok: true,
      request: {
        v: 1,
        kind: 'generate',
        export_id: 7,
        hour: Date.UTC(2026, 5, 1, 11),
        reason: 'hourly',
        requested_at: 1,
      },
    })
    expect(decodeExportRequest({ value: Buffer.from('{"v":1,"kind":"generate","export_id":0}') }).ok).toBe(
      false,
    )
    expect(decodeExportRequest({ value: Buffer.from('not json') })).toEqual({
      ok: false,
      reason: 'export request is not JSON',
    })
  })

  it('sweeps expired files and replaced ones once no link to them can be valid', async () => {
    const dir = await tempDir('sweep')
    try {
      const files = new LocalFiles(dir.path)
      const HOUR = 3_600_000
      const now = Date.UTC(2026, 5, 10, 12)
      const stamp = (ms: number) => new Date(ms).toISOString().replace(/[-:.]/g, '')
      const at = (key: string, ms: number) => `exports/1/7/${key}-${stamp(ms)}.jsonl.gz`
      const paths = {
        // Replaced 2 h ago: its links (1 h) are all expired.
        oldFull: at('full', now - 30 * HOUR),
        currentFull: at('full', now - 2 * HOUR),
        // Replaced 10 min ago, though written a day ago: a link given out just before may be valid.
        oldChanges: at('changes', now - 24 * HOUR),
        currentChanges: at('changes', now - 10 * 60_000),
        // Current but expired.
        expiredLog: `exports/1/8/hour2026050112-${stamp(now - 40 * 24 * HOUR)}.log.gz`,
      }
      for (const path of Object.values(paths)) await files.put(path, Buffer.from('x'))
      const live = [
        { path: paths.currentFull, generated_at: now - 2 * HOUR, expire_at: now + 46 * HOUR },
        { path: paths.currentChanges, generated_at: now - 10 * 60_000, expire_at: now + 47 * HOUR },
        { path: paths.expiredLog, generated_at: now - 40 * 24 * HOUR, expire_at: now - 9 * 24 * HOUR },
      ]
      const store: Store = {
        ...changesStore({ cursor: 0, newestInsert: 0 }),
        query: <T>(sql: string) => {
          if (!sql.includes('FROM export_files FINAL')) throw new Error(`unexpected query ${sql}`)
          return Promise.resolve(live as T[])
        },
      }
      let swept = -1
      const writer = exportWriter({
        store,
        files,
        clock: { now: () => now, sleep: () => Promise.resolve() },
        resultTtlMs: 48 * HOUR,
        logRetentionMs: 30 * 24 * HOUR,
        linkTtlMs: HOUR,
        onSwept: (n) => (swept = n),
      })
      const sweep = encodeExportRequest({ v: 1, kind: 'sweep', requested_at: now })
      const record = {
        topic: 'exports',
        partition: 0,
        offset: '0',
        key: sweep.key ?? null,
        value: sweep.value,
        headers: {},
        timestamp: now,
      }
      await writer({ topic: 'exports', partition: 0, records: [record] })
      expect(swept).toBe(2)
      expect(await files.list('exports')).toEqual(
        [paths.currentChanges, paths.oldChanges, paths.currentFull].sort(),
      )
    } finally {
      await dir.cleanup()
    }
  })
})
