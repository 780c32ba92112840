import { join } from 'node:path'
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postSdkTo, sessionRow } from '../helpers/ingestion-scenario.ts'
import { createTenant, startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'
import { pushFileLines } from '../helpers/push-file-lines.ts'
import { waitFor } from '../helpers/wait-for.ts'

const TOKEN = 'push-crash-admin-token-123'
const APP = 'crash-push'
const INSTALLS = 1200
const BATCH = 100

describe('kill -9 of the embedded process in the middle of a broadcast', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  let sluice: SluiceChild | undefined
  let client: ClickHouseClient | undefined
  beforeAll(async () => {
    dir = await tempDir('push-crash')
  })
  afterAll(async () => {
    await client?.close()
    await sluice?.stop()
    await dir.cleanup()
  })

  const sql = async <T>(query: string): Promise<T[]> =>
    await (await client!.query({ query, format: 'JSONEachRow' })).json<T>()
  const connect = () => {
    client = createClient({ url: sluice!.sqlUrl!, username: 'admin', password: TOKEN })
  }

  // Two starts (30 s each), the devices, the fan-out at 150 deliveries/s: above vitest's default.
  it(
    'records every install exactly once after a restart, and resends at most the batch in flight',
    { timeout: 240_000 },
    async () => {
      const env = {
        SLUICE_DATA_DIR: dir.path,
        SLUICE_ADMIN_TOKEN: TOKEN,
        // Slow enough that the kill lands mid fan-out, with many batches still to send.
        SLUICE_PUSH_SEND_RATE_PER_APP: '150',
        SLUICE_PUSH_BATCH_SIZE: String(BATCH),
      }
      sluice = await startSluice(env)
      const { auth } = await createTenant(sluice.url, TOKEN, APP)
      const at = Date.now() - 60_000
      const installs = Array.from({ length: INSTALLS }, (_, i) => `inst-${String(i).padStart(5, '0')}`)
      for (let i = 0; i < installs.length; i += 400)
        await postSdkTo(
          sluice.url,
          APP,
          installs.slice(i, i + 400).map((install, j) => ({
            ...sessionRow({ install, customer: `c${i + j}`, at, country: 'fr', model: 'm' }),
            platform: (i + j) % 2 === 0 ? 'iOS' : 'Android',
          })),
        )
      connect()
      await waitFor(
        () => sql<{ n: string }>(`SELECT count() AS n FROM devices FINAL WHERE app_id = '${APP}'`),
        (rows) => Number(rows[0]?.n) === INSTALLS,
        { what: 'the devices', timeoutMs: 60_000 },
      )

      const res = await fetch(`${sluice.url}/v2/push/${APP}`, {
        method: 'POST',
        headers: { Authorization: auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          request_id: 'crash-1',
          target_type: 'broadcast',
          messages: [{ alert: 'hello' }],
        }),
      })
      expect(res.status).toBe(202)
      const recorded = () =>
        sql<{ n: string }>(
          `SELECT count() AS n FROM push_deliveries WHERE app_id = '${APP}' AND request_id = 'crash-1'`,
        )
      const before = await waitFor(recorded, (rows) => Number(rows[0]?.n) >= 3 * BATCH, {
        what: 'the fan-out under way',
        timeoutMs: 60_000,
      })
      await client!.close()
      client = undefined
      await sluice.kill9()
      expect(Number(before[0]?.n)).toBeLessThan(INSTALLS)

      sluice = await startSluice(env)
      connect()
      const perInstall = await waitFor(
        () =>
          sql<{ install_uuid: string; n: string; status: string }>(
            `SELECT install_uuid, count() AS n, any(status) AS status FROM push_deliveries
           WHERE app_id = '${APP}' AND request_id = 'crash-1' GROUP BY install_uuid`,
          ),
        (rows) => rows.length === INSTALLS,
        { what: 'every install recorded', timeoutMs: 120_000 },
      )
      // Exactly once in the record, every one sent.
      expect(perInstall.filter((r) => Number(r.n) !== 1)).toEqual([])
      expect(perInstall.filter((r) => r.status !== 'sent')).toEqual([])
      expect(new Set(perInstall.map((r) => r.install_uuid))).toEqual(new Set(installs))
      const [request] = await sql<{ status: string; targeted: string }>(
        `SELECT status, targeted FROM push_requests FINAL WHERE app_id = '${APP}' AND request_id = 'crash-1'`,
      )
      expect(request).toMatchObject({ status: 'planned' })
      expect(Number(request?.targeted)).toBe(INSTALLS)

      // On the wire (the file transport's lines): every install at least once, and only the batch
      // in flight at the kill a second time.
      const lines = await pushFileLines<{ delivery_id: string; install_uuid: string }>(
        join(dir.path, 'push', APP),
      )
      const written = new Map<string, number>()
      for (const l of lines) written.set(l.install_uuid, (written.get(l.install_uuid) ?? 0) + 1)
      expect(new Set(written.keys())).toEqual(new Set(installs))
      const twice = [...written.values()].filter((n) => n > 1)
      expect(twice.every((n) => n === 2)).toBe(true)
      expect(twice.length).toBeLessThanOrEqual(BATCH)
      expect(lines.every((l) => l.delivery_id === `crash-1:${l.install_uuid}`)).toBe(true)
    },
  )
})
