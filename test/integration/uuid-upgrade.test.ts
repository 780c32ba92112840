import { copyFile, mkdir, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { MIGRATIONS_DIR, migrate } from '../../pipelines/connectors/store/migrations.ts'
import { canonicalDeviceId, canonicalEventUuid } from '../../schemas/uuid.ts'
import {
  SCHEMA_URL,
  lines,
  postSdk,
  postUpload,
  receiptDone,
  sdkReceiptDone,
} from '../helpers/ingestion-scenario.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { tempDir } from '../helpers/temp.ts'

/**
 * A data directory written before ids were canonicalised (migrations up to 008) keeps working
 * after the upgrade (issue 18): stored rows keep their ids, a replay of an old upload still finds
 * its event, and an old device continues under its canonical install uuid. Migration 009's SQL is
 * checked against schemas/uuid.ts on every spelling.
 */
const APP = 'upgrade-app'
const OLD_UUID = '6F1C2A9E3B4D4E5F8A7B9C0D1E2F3A4B' // stored as sent before the upgrade
const OLD_INSTALL = 'AB12CD34-EF56-4A78-9B01-23456789ABCD'
const SPELLINGS = [
  OLD_UUID,
  '6F1C2A9E-3B4D-4E5F-8A7B-9C0D1E2F3A4C',
  '6f1c2a9e3b4d4e5f8a7b9c0d1e2f3a4d',
  '6F1C-2A9E-3B4D-4E5F-8A7B-9C0D-1E2F-3A4E', // 32 digits, dashes elsewhere
  'ABCDEF0123456789ABCDEF0123456789ABCDEF01', // 40 digits: lower case only
  '6f1c2a9e-3b4d-4e5f-8a7b-9c0d1e2f3a4f', // canonical already: no copy
]
const INSTALLS = [
  OLD_INSTALL,
  'AB12CD34EF564A789B0123456789ABCE',
  'device-X-Not-A-Uuid',
  'ab12cd34-ef56-4a78-9b01-23456789abcf',
]

describe('canonical ids: upgrade of a data directory written before them', () => {
  let dir: { path: string; cleanup: () => Promise<void> }
  let sluice: InProcessSluice | undefined
  const now = Date.now()

  beforeAll(async () => {
    dir = await tempDir('uuid-upgrade')
    // The schema as it was before migration 009.
    const before = join(dir.path, 'migrations-before')
    await mkdir(before)
    for (const file of await readdir(MIGRATIONS_DIR))
      if (/^00[1-8]_.*\.sql$/.test(file)) await copyFile(join(MIGRATIONS_DIR, file), join(before, file))
    const store = await ChdbStore.open(join(dir.path, 'clickhouse'))
    await migrate(store, before)
    // What the old version stored: ids as they were sent.
    await store.insert(
      'events',
      SPELLINGS.map((uuid, i) => ({
        app_id: APP,
        uuid,
        customer_id: 'dora',
        event_name: 'old',
        event_time: now - 60_000 + i,
        received_at: now - 60_000,
        attributes: {},
        ltv_change: 0,
        source: 'server',
        transaction_id: `old-tx-${i}`,
        install_uuid: OLD_INSTALL,
      })),
    )
    const device = (install: string, version: number) => ({
      app_id: APP,
      install_uuid: install,
      device_uuid: install,
      customer_id: 'dora',
      last_active_at: now - 60_000,
      model: `model of ${install}`,
      country: 'it',
      version,
    })
    await store.insert(
      'devices',
      INSTALLS.map((install) => device(install, 5)),
    )
    await store.insert('customer_devices', [
      { ...device(OLD_INSTALL, 5), customer_id: 'dora', session_uuid: 'SESSION-1' },
    ])
    await store.close()
  })
  afterAll(async () => {
    await sluice?.close()
    await dir.cleanup()
  })

  it('migration 009 indexes every old spelling canonically, as schemas/uuid.ts spells it', async () => {
    sluice = await startInProcess({}, { dataDir: dir.path })
    const store = sluice.running.runtime.store
    const index = await store.query<{ uuid: string; tx: string }>(
      `SELECT uuid, argMin(transaction_id, received_at) AS tx FROM event_uuid_index
       WHERE app_id = {app:String} GROUP BY uuid ORDER BY uuid`,
      { app: APP },
    )
    const expected = new Map<string, string>()
    SPELLINGS.forEach((uuid, i) => {
      expected.set(uuid, `old-tx-${i}`)
      expected.set(canonicalEventUuid(uuid), `old-tx-${i}`)
    })
    expect(new Map(index.map((r) => [r.uuid, r.tx]))).toEqual(expected)
    // Stored events keep the ids they were stored with.
    const events = await store.query<{ uuid: string }>(
      `SELECT uuid FROM events WHERE app_id = {app:String} ORDER BY event_time`,
      { app: APP },
    )
    expect(events.map((e) => e.uuid)).toEqual(SPELLINGS)
    const devices = await store.query<{ install_uuid: string; device_uuid: string; model: string }>(
      `SELECT install_uuid, device_uuid, model FROM devices FINAL WHERE app_id = {app:String} ORDER BY install_uuid`,
      { app: APP },
    )
    const expectedDevices = new Map<string, { device_uuid: string; model: string }>()
    for (const install of INSTALLS) {
      expectedDevices.set(install, { device_uuid: install, model: `model of ${install}` })
      expectedDevices.set(canonicalDeviceId(install), {
        device_uuid: canonicalDeviceId(install),
        model: `model of ${install}`,
      })
    }
    expect(
      new Map(devices.map((d) => [d.install_uuid, { device_uuid: d.device_uuid, model: d.model }])),
    ).toEqual(expectedDevices)
    const [last] = await store.query<{ install_uuid: string; session_uuid: string }>(
      `SELECT install_uuid, session_uuid FROM customer_devices FINAL WHERE app_id = {app:String} AND customer_id = 'dora'`,
      { app: APP },
    )
    expect(last).toEqual({ install_uuid: canonicalDeviceId(OLD_INSTALL), session_uuid: 'SESSION-1' })
  })

  it('a replay of an old upload finds its event, and an old device continues', async () => {
    const s = sluice!
    const tenant = await s.tenant('upgrade', [APP])
    const res = await postUpload(
      s,
      tenant.auth,
      lines([
        {
          schema_url: SCHEMA_URL,
          app_uuid: APP,
          customer_id: 'dora',
          event_name: 'old',
          event_time: now,
          uuid: OLD_UUID,
        },
      ]),
    )
    expect(res.status).toBe(202)
    const receipt = await receiptDone(
      s,
      tenant.auth,
      ((await res.json()) as { transaction_id: string }).transaction_id,
    )
    expect(receipt).toMatchObject({ accepted: 0, rejected: 1 })
    expect(receipt.rejected_lines[0]).toMatchObject({ reason: 'duplicate' })
    expect(receipt.rejected_lines[0]!.detail).toContain('old-tx-0')

    // The SDK sends the old install uuid again, in its old spelling: the same device goes on.
    const tx = await postSdk(s, APP, [
      {
        type: 's',
        uuid: '11111111-2222-4333-8444-555555555555',
        install_uuid: OLD_INSTALL,
        at_millis: now,
        country: 'es',
      },
    ])
    await sdkReceiptDone(s, APP, tx)
    const [device] = await s.running.runtime.store.query<{ model: string; country: string }>(
      `SELECT model, country FROM devices FINAL WHERE app_id = {app:String} AND install_uuid = {install:String}`,
      { app: APP, install: canonicalDeviceId(OLD_INSTALL) },
    )
    expect(device).toEqual({ model: `model of ${OLD_INSTALL}`, country: 'es' })
  })
})
