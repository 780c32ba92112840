import { gzipSync } from 'node:zlib'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
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
import { tempDir } from '../helpers/temp.ts'
import { waitFor } from '../helpers/wait-for.ts'

/**
 * Single uploads that once stopped a pipeline for good (the record is durable, so the stall
 * survived a restart). Each is uploaded, then a valid upload, which must arrive; and after a
 * restart on the same data directory, a valid upload still arrives.
 */
describe('no input stops a pipeline (embedded)', () => {
  let dir: { path: string; cleanup: () => Promise<void> }
  let sluice: InProcessSluice
  let auth: string
  const APP = 'poison-app'
  const now = Date.now()

  const event = (o: Record<string, unknown> = {}) => ({
    schema_url: SCHEMA_URL,
    app_uuid: APP,
    customer_id: 'c-1',
    event_name: 'purchase',
    event_time: now,
    uuid: uuid(),
    ...o,
  })

  const storedEvent = (id: string) =>
    sluice.running.runtime.store.query<{ event_name: string; attributes: Record<string, string> }>(
      `SELECT event_name, attributes FROM events WHERE app_id = {app:String} AND uuid = {uuid:String}`,
      { app: APP, uuid: id },
    )

  /**
   * Posts a valid event and waits until it is stored. While a huge poison upload is still being
   * worked off, the edge may shed load (503 with Retry-After, the overload contract): a client
   * retries then, and the upload must be taken once the backlog is gone.
   */
  async function validArrives(): Promise<void> {
    const valid = event()
    const res = await waitFor(
      () => postUpload(sluice, auth, lines([valid])),
      (r) => {
        if (r.status === 503) expect(r.headers.get('Retry-After')).toMatch(/^\d+$/)
        return r.status !== 503
      },
      { what: 'the edge to take a valid upload after a poison upload', timeoutMs: 30_000, intervalMs: 500 },
    )
    expect(res.status).toBe(202)
    const rows = await waitFor(
      () => storedEvent(valid.uuid),
      (r) => r.length === 1,
      { what: 'the valid event after a poison upload', timeoutMs: 30_000 },
    )
    expect(rows[0]!.event_name).toBe('purchase')
  }

  async function upload(body: string | Buffer): Promise<string> {
    const res = await postUpload(sluice, auth, body)
    expect(res.status).toBe(202)
    return ((await res.json()) as { transaction_id: string }).transaction_id
  }

  beforeAll(async () => {
    dir = await tempDir('poison')
    sluice = await startInProcess({}, { dataDir: dir.path })
    auth = (await sluice.tenant('poison', [APP])).auth
    // Server-side events are attributed to their customer's device: make c-1 known.
    const tx = await postSdk(sluice, APP, [
      sessionRow({ install: 'install-c1', customer: 'c-1', at: now - 1000, country: 'FR', model: 'Pixel' }),
    ])
    await sdkReceiptDone(sluice, APP, tx)
  })
  afterAll(async () => {
    await sluice?.close()
    await dir?.cleanup()
  })

  it('a body of the four bytes of an emoji is refused with a readable reason', async () => {
    const tx = await upload(Buffer.from('😀'))
    const receipt = await receiptDone(sluice, auth, tx)
    expect(receipt.rejected).toBe(1)
    expect(receipt.rejected_lines[0]!.reason).toBe('invalid_json')
    expect(receipt.rejected_lines[0]!.detail.isWellFormed()).toBe(true)
    await validArrives()
  })

  it('an attribute name cut by the length limit in the middle of an emoji', async () => {
    const name = `${'a'.repeat(39)}😀${'b'.repeat(100)}`
    const tx = await upload(lines([event({ attributes: { [name]: 'x' } })]))
    const receipt = await receiptDone(sluice, auth, tx)
    expect(receipt.rejected_lines.map((r) => r.reason)).toEqual(['invalid_attributes'])
    const detail = receipt.rejected_lines[0]!.detail
    expect(detail.isWellFormed()).toBe(true)
    expect(detail).toContain('a'.repeat(39))
    await validArrives()
  })

  it('a lone surrogate in an attribute value is stored as U+FFFD; non-BMP text intact', async () => {
    const poisoned = event({ attributes: { note: 'x' } })
    const text = JSON.stringify(poisoned).replace('"note":"x"', '"note":"a\\ud800b","emoji":"🎉 ok"')
    const tx = await upload(`${text}\n`)
    const receipt = await receiptDone(sluice, auth, tx)
    expect(receipt.accepted).toBe(1)
    const [row] = await storedEvent(poisoned.uuid)
    expect(row!.attributes).toEqual({ note: 'a\uFFFDb', emoji: '🎉 ok' })
    await validArrives()
  })

  it('SDK rows with a lone surrogate or a non-BMP character', async () => {
    const install = `inst-${uuid()}`
    const session = { ...sessionRow({ install, at: now, country: 'FR', model: 'iPhone 15 😀' }) }
    const surrogate = JSON.stringify({
      type: 'e',
      uuid: uuid(),
      install_uuid: install,
      at_millis: now + 1,
      name: 'tap',
      attributes: { label: 'x' },
    }).replace('"label":"x"', '"label":"\\udfff🎉"')
    const nonBmp = { type: 'e', uuid: uuid(), install_uuid: install, at_millis: now + 2, name: '🎉 party' }
    const tx = await postSdk(sluice, APP, [session, surrogate, nonBmp])
    const receipt = await sdkReceiptDone(sluice, APP, tx)
    expect(receipt.rejected).toBe(0)
    expect(receipt.accepted).toBe(3)
    const events = await sluice.running.runtime.store.query<{
      event_name: string
      attributes: Record<string, string>
    }>(
      `SELECT event_name, attributes FROM events WHERE app_id = {app:String} AND install_uuid = {install:String}
       ORDER BY event_time`,
      { app: APP, install },
    )
    expect(events).toEqual([
      { event_name: 'tap', attributes: { label: '\uFFFD🎉' } },
      { event_name: '🎉 party', attributes: {} },
    ])
    const [device] = await sluice.running.runtime.store.query<{ model: string }>(
      `SELECT model FROM devices FINAL WHERE app_id = {app:String} AND install_uuid = {install:String}`,
      { app: APP, install },
    )
    expect(device!.model).toBe('iPhone 15 😀')
    await validArrives()
  })

  it('131,071 invalid lines in one upload: a bounded receipt, and the pipeline moves on', async () => {
    const body = Buffer.from('x\n'.repeat(131_071))
    const tx = await upload(body)
    const receipt = await receiptDone(sluice, auth, tx)
    expect(receipt.lines).toBe(131_071)
    expect(receipt.rejected).toBe(131_071)
    // The receipt lists the first rejected lines only, with the total count above.
    expect(receipt.rejected_lines.length).toBeLessThanOrEqual(1000)
    expect(receipt.rejected_lines[0]).toMatchObject({ line: 1, reason: 'invalid_json' })
    await validArrives()
  })

  it('a 2 KB gzip SDK upload of 1,000,000 invalid lines: counted, 1,000 listed', async () => {
    const body = gzipSync('x\n'.repeat(1_000_000))
    expect(body.length).toBeLessThan(4096)
    const res = await fetch(`${sluice.url}/v1/sdk/apps/${APP}/uploads`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-gzip' },
      body,
    })
    expect(res.status).toBe(202)
    const tx = ((await res.json()) as { transaction_id: string }).transaction_id
    const receipt = await sdkReceiptDone(sluice, APP, tx)
    expect(receipt).toMatchObject({ lines: 1_000_000, accepted: 0, rejected: 1_000_000 })
    expect(receipt.rejected_lines).toHaveLength(1000)
    expect(receipt.rejected_lines.at(-1)).toMatchObject({ line: 1000, reason: 'invalid_json' })
    await validArrives()
  })

  it('after a restart on the same data directory, a valid upload still arrives', async () => {
    await sluice.close()
    sluice = await startInProcess({}, { dataDir: dir.path })
    await validArrives()
  })
})
