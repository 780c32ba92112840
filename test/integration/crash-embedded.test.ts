import { createClient } from '@clickhouse/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { postSdkTo, sessionRow } from '../helpers/ingestion-scenario.ts'
import { createTenant, startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'
import { exactlyOnceViolations, streamUploads } from '../helpers/upload-stream.ts'
import { waitFor } from '../helpers/wait-for.ts'

const TOKEN = 'crash-test-admin-token-123'

describe('kill -9 of the embedded process while uploads stream in', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  let sluice: SluiceChild | undefined
  beforeAll(async () => {
    dir = await tempDir('crash')
  })
  afterAll(async () => {
    await sluice?.stop()
    await dir.cleanup()
  })

  // Two starts (30 s limit each) and a wait of up to 60 s for the events: above vitest's default.
  it('stores every event answered 202 exactly once after a restart', { timeout: 180_000 }, async () => {
    const env = { SLUICE_DATA_DIR: dir.path, SLUICE_ADMIN_TOKEN: TOKEN }
    sluice = await startSluice(env)
    const { auth } = await createTenant(sluice.url, TOKEN, 'crash-app')
    const customers = ['c0', 'c1', 'c2', 'c3']
    await postSdkTo(
      sluice.url,
      'crash-app',
      customers.map((c, i) =>
        sessionRow({
          install: `i-${c}`,
          customer: c,
          at: Date.now() - 10_000 + i,
          country: 'fr',
          model: 'm',
        }),
      ),
    )
    const sql = () => createClient({ url: sluice!.sqlUrl!, username: 'admin', password: TOKEN })
    let client = sql()
    await waitFor(
      async () =>
        (
          await (
            await client.query({
              query: 'SELECT count() AS n FROM customer_devices FINAL',
              format: 'JSONEachRow',
            })
          ).json<{ n: string }>()
        )[0]?.n,
      (n) => Number(n) === customers.length,
      { what: 'devices' },
    )
    await client.close()

    const stream = streamUploads({ url: () => sluice!.url, auth, appId: 'crash-app', customers })
    await waitFor(
      async () => stream.sent.filter((b) => b.status === 202).length,
      (n) => n >= 30,
      { what: 'accepted uploads' },
    )
    await sluice.kill9()
    await stream.stop()
    const accepted = stream.sent.filter((b) => b.status === 202)
    expect(accepted.length).toBeGreaterThanOrEqual(30)

    sluice = await startSluice(env)
    client = sql()
    const storedCounts = async () => {
      const rows = await (
        await client.query({
          query: "SELECT uuid, count() AS n FROM events WHERE app_id = 'crash-app' GROUP BY uuid",
          format: 'JSONEachRow',
        })
      ).json<{ uuid: string; n: string }>()
      return new Map(rows.map((r) => [r.uuid, Number(r.n)]))
    }
    const acceptedUuids = new Set(accepted.flatMap((b) => b.uuids))
    const counts = await waitFor(storedCounts, (m) => [...acceptedUuids].every((id) => m.has(id)), {
      what: 'every accepted event stored',
      timeoutMs: 60_000,
    })
    expect(exactlyOnceViolations(stream.sent, counts)).toEqual([])
    await client.close()
  })
})
