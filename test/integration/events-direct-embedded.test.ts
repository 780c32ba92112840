import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { StoredDeadLetter } from '../../pipelines/failures/dead-letters.ts'
import { ADMIN_TOKEN } from '../helpers/edge.ts'
import {
  SCHEMA_URL,
  lines,
  postSdk,
  postUpload,
  receiptDone,
  sdkReceiptDone,
  sessionRow,
  uuid,
} from '../helpers/ingestion-scenario.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'

// Embedded mode stores server-side events straight from the upload splitter (the process is the
// only writer of `events`): a batch the engine refuses is then an upload to dead-letter, whole,
// at stage upload-splitter, while the other uploads of its batch are stored.
describe('server-side events written by the splitter (embedded mode)', () => {
  let sluice: InProcessSluice
  beforeAll(async () => {
    sluice = await startInProcess()
  })
  afterAll(() => sluice.close())

  it('stores each upload of a batch, dead-letters the one the engine refuses, and stores it on replay after the fix', async () => {
    const app = 'direct-app'
    const { auth } = await sluice.tenant('direct-org', [app])
    const now = Date.now()
    await sdkReceiptDone(
      sluice,
      app,
      await postSdk(sluice, app, [
        sessionRow({ install: 'i-1', customer: 'carol', at: now - 60_000, country: 'nl', model: 'm' }),
      ]),
    )
    const { store, topology } = sluice.running.runtime
    const event = (name: string) => ({
      schema_url: SCHEMA_URL,
      app_uuid: app,
      customer_id: 'carol',
      event_name: name,
      event_time: now,
      uuid: uuid(),
    })
    const eventsOf = async () =>
      (
        await store.query<{ event_name: string }>(
          'SELECT event_name FROM events WHERE app_id = {app:String} ORDER BY event_name',
          { app },
        )
      ).map((r) => r.event_name)

    await store.command(`ALTER TABLE events ADD CONSTRAINT direct_test CHECK event_name != 'blocked'`)
    let refusedTx: string
    try {
      // Posted together, so they are likely to share a splitter batch; either way each is judged alone.
      const answers = await Promise.all(
        [[event('a1'), event('a2')], [event('blocked')], [event('b1')]].map((body) =>
          postUpload(sluice, auth, lines(body)),
        ),
      )
      const [okA, refused, okB] = (await Promise.all(answers.map((r) => r.json()))) as {
        transaction_id: string
      }[]
      refusedTx = refused!.transaction_id
      for (const tx of [okA!.transaction_id, okB!.transaction_id]) {
        const receipt = await receiptDone(sluice, auth, tx)
        expect(receipt.rejected).toBe(0)
      }
      const letters = await waitFor(
        () => adminGet<StoredDeadLetter[]>('/dead-letters?stage=upload-splitter'),
        (list) => list.length === 1,
        { what: 'the refused upload dead-lettered', timeoutMs: 60_000 },
      )
      expect(letters[0]).toMatchObject({
        stage: 'upload-splitter',
        topic: topology.topics.uploads.topic,
        headers: expect.objectContaining({ tx: refusedTx }) as unknown,
      })
      expect(letters[0]!.error).toMatch(/Constraint `direct_test`/)
      expect(await eventsOf()).toEqual(['a1', 'a2', 'b1'])
    } finally {
      await store.command('ALTER TABLE events DROP CONSTRAINT direct_test')
    }
    const [letter] = await adminGet<StoredDeadLetter[]>('/dead-letters?stage=upload-splitter')
    const replay = await fetch(`${sluice.url}/admin/v1/dead-letters/${letter!.id}/replay`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
    })
    expect(replay.status).toBe(202)
    const receipt = await receiptDone(sluice, auth, refusedTx)
    expect(receipt).toMatchObject({ state: 'done', accepted: 1, rejected: 0 })
    expect(await eventsOf()).toEqual(['a1', 'a2', 'b1', 'blocked'])
  })

  async function adminGet<T>(path: string): Promise<T> {
    const res = await fetch(`${sluice.url}/admin/v1${path}`, {
      headers: { Authorization: `Bearer ${ADMIN_TOKEN}` },
    })
    expect(res.status).toBe(200)
    return (await res.json()) as T
  }
})
