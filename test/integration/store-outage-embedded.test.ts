import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { postSdkTo, sessionRow } from '../helpers/ingestion-scenario.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { outageMs } from '../helpers/store-outage.ts'
import { exactlyOnceViolations, streamUploads } from '../helpers/upload-stream.ts'
import { waitFor } from '../helpers/wait-for.ts'

const APP = 'outage-embedded-app'
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

// The embedded engine refuses every insert for a while (ChdbStore.insertFault: the error a full
// disk gives) under a steady load, then takes them again: the edge keeps answering 202 (the local
// log holds the backlog), the workers retry without dead-lettering, and every accepted event is
// stored once after the return. docs/scaling.md reports the drain time.
describe("the embedded engine's inserts fail under load and come back (embedded mode)", () => {
  let sluice: InProcessSluice
  const outage = outageMs()
  beforeAll(async () => {
    // By default the edge sheds load (503, Retry-After) once its oldest unprocessed upload is 10 s
    // old (SLUICE_MAX_BACKLOG_SECONDS): a deployment that rides out store outages with 202s sets it
    // above the outage it expects (docs/scaling.md), as here.
    sluice = await startInProcess({ SLUICE_MAX_BACKLOG_SECONDS: String(Math.ceil((3 * outage) / 1000)) })
  })
  afterAll(async () => {
    await sluice.close()
  })

  it(
    'keeps answering 202, dead-letters nothing and stores every accepted event once after the return',
    { timeout: 300_000 },
    async () => {
      const outage = outageMs()
      const store = sluice.running.runtime.store
      if (!(store instanceof ChdbStore)) throw new Error('embedded mode runs chdb')
      const count = async (sql: string) => Number((await store.query<{ n: string }>(sql))[0]?.n)
      const stored = () => count(`SELECT count() AS n FROM events WHERE app_id = '${APP}'`)
      const { auth } = await sluice.tenant('outage', [APP])
      // Server-side events are attributed to their customer's device: give each customer one.
      const customers = ['c0', 'c1']
      await postSdkTo(
        sluice.url,
        APP,
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
      await waitFor(
        () => count(`SELECT count() AS n FROM customer_devices FINAL WHERE app_id = '${APP}'`),
        (n) => n === customers.length,
        { what: 'devices', timeoutMs: 60_000 },
      )

      const stream = streamUploads({
        url: () => sluice.url,
        auth,
        appId: APP,
        customers,
        concurrency: 1,
        paceMs: 500,
      })
      await waitFor(stored, (n) => n > 40, { what: 'events stored before the outage', timeoutMs: 60_000 })

      store.insertFault = () =>
        new Error('Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE)')
      const sentBefore = stream.sent.length
      // An insert already inside the engine when the fault began may still finish.
      await sleep(1_000)
      const storedAtStart = await stored()
      await sleep(Math.max(0, outage - 1_000))
      const storedAtEnd = await stored()
      const during = stream.sent.slice(sentBefore)
      store.insertFault = undefined
      const back = Date.now()
      await sleep(2_000)
      await stream.stop()

      // Nothing was stored while the fault held, yet the edge accepted every body meanwhile.
      expect(storedAtEnd).toBe(storedAtStart)
      expect(during.length).toBeGreaterThanOrEqual(outage / 1000)
      expect(during.filter((b) => b.status !== 202).map((b) => b.status)).toEqual([])

      const accepted = new Set(stream.sent.filter((b) => b.status === 202).flatMap((b) => b.uuids))
      const counts = await waitFor(
        async () => {
          const rows = await store.query<{ uuid: string; n: string }>(
            `SELECT uuid, count() AS n FROM events WHERE app_id = '${APP}' GROUP BY uuid`,
          )
          return new Map(rows.map((r) => [r.uuid, Number(r.n)]))
        },
        (m) => [...accepted].every((id) => m.has(id)),
        { what: 'every accepted event stored after the return', timeoutMs: 180_000, intervalMs: 250 },
      )
      const drainMs = Date.now() - back
      console.log(
        `store outage (embedded): inserts failed for ${outage} ms, ${during.length} bodies accepted meanwhile, ` +
          `${accepted.size} events in all, every one stored ${drainMs} ms after inserts came back`,
      )
      expect(exactlyOnceViolations(stream.sent, counts)).toEqual([])
      expect(await count('SELECT count() AS n FROM dead_letters')).toBe(0)
    },
  )
})
