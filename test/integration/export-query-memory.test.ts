import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { compileMembers } from '../../pipelines/audiences/compile-rules.ts'
import { LocalFiles } from '../../pipelines/connectors/files/local-files.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { DAY_MS, HOUR_MS } from '../../pipelines/exports/export-kinds.ts'
import {
  audienceIdentifierQuery,
  EXPORT_MAX_MEMORY_BYTES,
  EXPORT_SETTINGS,
  LINE_FORMAT,
  logHourQuery,
  type ExportQuery,
} from '../../pipelines/exports/export-queries.ts'
import { latestFile } from '../../pipelines/exports/export-records.ts'
import { exportWriter } from '../../pipelines/exports/export-writer.ts'
import { encodeExportRequest } from '../../pipelines/exports/generation-requests.ts'
import { parseTargetRules } from '../../schemas/audiences.ts'
import { tempDir } from '../helpers/temp.ts'

/**
 * The export queries' memory bounds, on the embedded engine: what keeps them is the shape of the
 * stream (blocks of at most EXPORT_SETTINGS.max_block_size rows, whatever the table's granules)
 * and deduplication by an aggregation that can spill. Sizes are measured by the bench; here, the
 * blocks and the rows.
 */
const APP = 'mem-app'
const HOUR = Math.floor((Date.now() - 2 * HOUR_MS) / HOUR_MS) * HOUR_MS
const LOG_ROWS = 5000

let store: ChdbStore
let cleanup: () => Promise<void>
let root: string

beforeAll(async () => {
  const dir = await tempDir('export-memory')
  cleanup = dir.cleanup
  root = dir.path
  store = await ChdbStore.open(dir.path)
  await migrate(store)
  // One insert, one part: all 5,000 rows fit one 8,192-row granule. Wide, as the part of a large
  // hour is (parts under 10 MB are compact, and a compact part is read a granule at a time, but
  // then the whole part is small).
  await store.command('ALTER TABLE raw_log MODIFY SETTING min_bytes_for_wide_part = 0')
  await store.command(
    `INSERT INTO raw_log (app_id, type, uuid, at, install_uuid, customer_id, row, transaction_id, received_at)
     SELECT {app:String}, 'e', u, fromUnixTimestamp64Milli(at_ms, 'UTC'), inst, cust,
            concat('{"type":"e","uuid":', toJSONString(u), ',"install_uuid":', toJSONString(inst),
                   ',"at_millis":', toString(at_ms), ',"customer_id":', toJSONString(cust),
                   ',"name":"Viewed","attributes":{"customer_id":"nested","n":"', toString(number), '"}}'),
            'tx', fromUnixTimestamp64Milli(at_ms, 'UTC')
     FROM (SELECT number, concat('u-', toString(number)) AS u, concat('inst-', toString(number % 50)) AS inst,
                  if(number % 2 = 0, concat('cust-', toString(number % 7)), '') AS cust,
                  toInt64({hour:Int64} + number * 700) AS at_ms
           FROM numbers({rows:UInt64}))`,
    { app: APP, hour: HOUR, rows: LOG_ROWS },
  )
})
afterAll(async () => {
  await store.close()
  await cleanup()
})

async function readBlocks(query: ExportQuery): Promise<string[][]> {
  const blocks: string[][] = []
  for await (const chunk of store.queryStream(query.sql, query.params, LINE_FORMAT)) {
    const text = (chunk as Buffer).toString('utf8')
    expect(text.endsWith('\n')).toBe(true)
    blocks.push(text.slice(0, -1).split('\n'))
  }
  return blocks
}

describe('export queries on the embedded engine', () => {
  it('stream an hour of the raw log in blocks of at most max_block_size rows, not whole granules', async () => {
    const blocks = await readBlocks(logHourQuery(APP, HOUR))
    const lines = blocks.flat()
    expect(lines).toHaveLength(LOG_ROWS)
    const blockRows = Number(EXPORT_SETTINGS.max_block_size)
    expect(blockRows).toBe(1024)
    expect(blocks.length).toBeGreaterThanOrEqual(Math.ceil(LOG_ROWS / blockRows))
    for (const block of blocks) expect(block.length).toBeLessThanOrEqual(blockRows)
    const rows = lines.map((l) => JSON.parse(l) as Record<string, unknown>)
    const byUuid = new Map(rows.map((r) => [r.uuid, r]))
    expect(byUuid.size).toBe(LOG_ROWS)
    // The top-level customer_id became customer_ids; the attribute of that name stayed.
    expect(byUuid.get('u-4')).toMatchObject({
      app: APP,
      uuid: 'u-4',
      install_uuid: 'inst-4',
      customer_ids: { customer_id: 'cust-4' },
      attributes: { customer_id: 'nested', n: '4' },
      at: new Date(HOUR + 4 * 700).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    })
    expect(byUuid.get('u-4')).not.toHaveProperty('customer_id')
    expect(byUuid.get('u-3')).toMatchObject({ customer_ids: {} })
  })

  it('write each audience identifier once (deduplicated by a spilling GROUP BY)', async () => {
    // 50 installs, customers shared by several installs, ad ids shared by pairs of installs.
    await store.command(
      `INSERT INTO devices (app_id, install_uuid, device_uuid, customer_id, last_active_at, platform,
                            advertising_id, limit_advertising, version)
       SELECT {app:String}, concat('inst-', toString(number)), concat('dev-', toString(number)),
              concat('cust-', toString(number % 7)), now64(3), if(number < 40, 'iOS', 'Android'),
              concat('AD-', toString(intDiv(number, 2))), 0, 1
       FROM numbers(50)`,
      { app: APP },
    )
    await store.command(
      `INSERT INTO sessions (app_id, session_uuid, install_uuid, customer_id, started_at, platform)
       SELECT {app:String}, concat('s-', toString(number)), concat('inst-', toString(number)),
              concat('cust-', toString(number % 7)), now64(3) - INTERVAL 1 HOUR, 'iOS'
       FROM numbers(50)`,
      { app: APP },
    )
    const parsed = parseTargetRules({
      behavior_profile_operator: 'and',
      targeting_type: 'install_id',
      behavior: {
        days: 30,
        behavior_rule_operator: 'and',
        rules: [{ rule_type: 'session', count: 1, count_operator: 'at_least' }],
      },
    })
    if (!parsed.ok) throw new Error('rules do not parse')
    const members = compileMembers(parsed.rules, {
      appId: APP,
      appProfiledbId: 2,
      orgProfiledbId: 1,
      now: Date.now(),
    })
    const ctx = { appId: APP, orgProfiledbId: 1 }
    const lines = async (type: 'idfa' | 'gaid' | 'customer_id') =>
      (await readBlocks(audienceIdentifierQuery(members, type, ctx))).flat().sort()

    const idfa = await lines('idfa')
    expect(idfa).toEqual(Array.from({ length: 20 }, (_, i) => `{"IDFA":"AD-${i}"}`).sort())
    expect(await lines('gaid')).toEqual(Array.from({ length: 5 }, (_, i) => `{"GAID":"AD-${20 + i}"}`).sort())
    expect(await lines('customer_id')).toEqual(
      Array.from({ length: 7 }, (_, i) => `{"CUSTOMER_ID":"cust-${i}"}`).sort(),
    )
  })

  it("fail a file past the memory guard with the engine's message, and leave no file", async () => {
    const now = Date.now()
    await store.insert('export_jobs', [
      {
        id: 41,
        org_id: 1,
        source_type: 'logs',
        source_id: APP,
        job_type: 'logs',
        name: 'guard',
        app_id: APP,
        enabled: 1,
        enabled_at: now,
        disabled_at: null,
        created_at: now,
        version: 1,
      },
    ])
    // The export's own settings, with the guard lowered to 256 KB for this query stream (and
    // memory tracked to the KB: by default a thread's first 4 MB go unchecked).
    const guarded: Store = Object.create(store) as Store
    guarded.queryStream = (sql, params, format) =>
      store.queryStream(
        sql.replace(
          `max_memory_usage = ${EXPORT_MAX_MEMORY_BYTES}`,
          'max_memory_usage = 262144, max_untracked_memory = 1024',
        ),
        params,
        format,
      )
    const filesDir = join(root, 'files')
    const writer = exportWriter({
      store: guarded,
      files: new LocalFiles(filesDir),
      settleMs: 0,
      resultTtlMs: DAY_MS,
      logRetentionMs: 30 * DAY_MS,
      linkTtlMs: HOUR_MS,
    })
    const message = encodeExportRequest({
      v: 1,
      kind: 'generate',
      export_id: 41,
      hour: HOUR,
      reason: 'admin',
      requested_at: now,
    })
    const record = {
      topic: 'exports',
      partition: 0,
      offset: '0',
      key: message.key ?? null,
      value: message.value,
      headers: {},
      timestamp: now,
    }
    await expect(writer({ topic: 'exports', partition: 0, records: [record] })).rejects.toThrow(
      /MEMORY_LIMIT_EXCEEDED|memory limit/i,
    )
    expect(await latestFile(store, 41)).toBeUndefined()
    const left = await readdir(filesDir, { recursive: true }).catch(() => [])
    expect(left.filter((name) => /\.(gz|tmp)$/.test(String(name)))).toEqual([])
  })
})
