import { gzipSync } from 'node:zlib'
import { expect } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import {
  SCHEMA_URL,
  lines,
  postSdk,
  postUpload,
  receiptDone,
  sdkReceiptDone,
  sessionRow,
  uuid,
  type Receipt,
} from '../helpers/ingestion-scenario.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'

interface StoredEvent {
  app_id: string
  uuid: string
  customer_id: string
  event_name: string
  event_time: string
  attributes: Record<string, string>
  ltv_change: number | string
  install_uuid: string
  country: string
  language: string
  app_version: string
  os_version: string
  platform: string
  model: string
  device_timezone: string
  source: string
}

const eventsOf = (store: Store, app: string) =>
  store.query<StoredEvent>(
    `SELECT app_id, uuid, customer_id, event_name, toUnixTimestamp64Milli(event_time) AS event_time, attributes,
            ltv_change, install_uuid, country, language, app_version, os_version, platform, model, device_timezone, source
     FROM events WHERE app_id = {app:String} ORDER BY event_time, uuid`,
    { app },
  )

/**
 * The whole ingestion contract, run the same way in both modes: SDK sessions build devices; a
 * server-side body mixing valid, invalid, duplicate, unknown-customer and out-of-window lines; a
 * gzip body with a cross-body duplicate; the exact rows and receipts.
 */
export async function runIngestionScenario(sluice: InProcessSluice, store: Store, suffix: string) {
  const appId = `app-${suffix}`
  const tenant = await sluice.tenant(`org-${suffix}`, [appId])
  const other = await sluice.tenant(`other-${suffix}`, [`foreign-${suffix}`])
  const now = Date.now()

  // SDK: alice on one iPhone; bob on an old iPad, then a newer iPhone (his last active device).
  const sdkTx = await postSdk(sluice, appId, [
    sessionRow({
      install: 'i-alice',
      customer: 'alice',
      at: now - 60_000,
      country: 'fr',
      model: 'iPhone15,2',
    }),
    sessionRow({
      install: 'i-bob-old',
      customer: 'bob',
      at: now - 50_000,
      country: 'de',
      model: 'iPad8,1',
      language: 'de',
    }),
    {
      type: 'e',
      uuid: uuid(),
      install_uuid: 'i-bob-old',
      at_millis: now - 49_000,
      name: 'Opened',
      customer_ids: { customer_id: 'bob' },
    },
    sessionRow({
      install: 'i-bob-new',
      customer: 'bob',
      at: now - 40_000,
      country: 'us',
      model: 'iPhone16,1',
      app_ver: '3.0.0',
    }),
    {
      type: 'c',
      uuid: uuid(),
      install_uuid: 'i-bob-new',
      at_millis: now - 39_000,
      customer_ids: { customer_id: 'bob' },
    },
    '{"type":"s"',
  ])
  const sdkReceipt = await sdkReceiptDone(sluice, appId, sdkTx)
  expect(sdkReceipt).toMatchObject({ state: 'done', lines: 6, accepted: 5, rejected: 1 })
  expect(sdkReceipt.rejected_lines).toEqual([
    { line: 6, uuid: null, reason: 'invalid_json', detail: expect.any(String) },
  ])

  const ev = (o: Record<string, unknown>) => ({
    schema_url: SCHEMA_URL,
    app_uuid: appId,
    event_time: now - 1000,
    event_name: 'Purchase',
    ...o,
  })
  const u = Array.from({ length: 8 }, () => uuid())
  const body = lines([
    ev({ uuid: u[0], customer_id: 'alice', attributes: { sku: 'A-1', qty: 2 }, ltv_change: 299 }),
    ev({ uuid: u[1], customer_id: 'bob', event_name: 'Refund', ltv_change: -150 }),
    ev({ uuid: u[0], customer_id: 'alice' }), // duplicate in body
    ev({ uuid: u[2], customer_id: 'carol' }), // no device: unknown customer
    ev({ uuid: u[3], customer_id: 'alice', event_time: now - 73 * 3_600_000 }), // out of window
    '{not json',
    ev({ uuid: u[4], customer_id: 'alice', event_name: 'x'.repeat(129) }),
    ev({ uuid: u[5], customer_id: 'alice', app_uuid: `foreign-${suffix}` }), // app of another org
    '',
    ev({ uuid: u[6], customer_id: 'bob', event_name: 'Viewed', attributes: { price: 2.5 } }),
  ])
  const res = await postUpload(sluice, tenant.auth, body)
  expect(res.status).toBe(202)
  const { transaction_id } = (await res.json()) as { transaction_id: string }
  expect(transaction_id).toMatch(/^[A-Za-z0-9_-]{43}$/)

  const receipt = await receiptDone(sluice, tenant.auth, transaction_id)
  expect(receipt).toMatchObject({ transaction_id, state: 'done', lines: 9, accepted: 3, rejected: 6 })
  expect(receipt.rejected_lines.map((r) => [r.line, r.uuid, r.reason])).toEqual([
    [3, u[0], 'duplicate_in_body'],
    [4, u[2], 'unknown_customer'],
    [5, u[3], 'event_time_out_of_window'],
    [6, null, 'invalid_json'],
    [7, u[4], 'invalid_event_name'],
    [8, u[5], 'unknown_app'],
  ])

  const rows = await eventsOf(store, appId)
  const server = rows.filter((r) => r.source === 'server')
  expect(
    server.map((r) => [
      r.uuid,
      r.customer_id,
      r.event_name,
      r.install_uuid,
      r.country,
      r.model,
      r.app_version,
      r.language,
    ]),
  ).toEqual(
    [
      [u[0], 'alice', 'Purchase', 'i-alice', 'fr', 'iPhone15,2', '2.1.0', 'en'],
      [u[1], 'bob', 'Refund', 'i-bob-new', 'us', 'iPhone16,1', '3.0.0', 'en'],
      [u[6], 'bob', 'Viewed', 'i-bob-new', 'us', 'iPhone16,1', '3.0.0', 'en'],
    ].sort((a, b) => (a[0]! < b[0]! ? -1 : 1)),
  )
  const alice = server.find((r) => r.uuid === u[0])!
  expect(alice.attributes).toEqual({ sku: 'A-1', qty: '2' })
  expect(Number(alice.ltv_change)).toBe(299)
  expect(Number(alice.event_time)).toBe(now - 1000)
  expect(alice).toMatchObject({ os_version: '17.1', platform: 'iOS', device_timezone: 'Europe/Paris' })
  expect(Number(server.find((r) => r.uuid === u[1])!.ltv_change)).toBe(-150)
  expect(server.find((r) => r.uuid === u[6])!.attributes).toEqual({ price: '2.5' })
  const sdkEvents = rows.filter((r) => r.source === 'sdk')
  expect(sdkEvents.map((r) => [r.event_name, r.customer_id, r.install_uuid, r.country, r.model])).toEqual([
    ['Opened', 'bob', 'i-bob-old', 'de', 'iPad8,1'],
  ])

  // A gzip body: one event already stored (another body: duplicate) and one new event.
  const gz = gzipSync(
    lines([
      ev({ uuid: u[1], customer_id: 'bob', event_name: 'Refund' }),
      ev({ uuid: u[7], customer_id: 'alice', event_name: 'Share' }),
    ]),
  )
  const res2 = await postUpload(sluice, tenant.auth, gz, { 'Content-Type': 'application/x-gzip' })
  expect(res2.status).toBe(202)
  const tx2 = ((await res2.json()) as { transaction_id: string }).transaction_id
  const receipt2 = await receiptDone(sluice, tenant.auth, tx2)
  expect(receipt2).toMatchObject({ state: 'done', lines: 2, accepted: 1, rejected: 1 })
  expect(receipt2.rejected_lines.map((r) => [r.line, r.uuid, r.reason])).toEqual([[1, u[1], 'duplicate']])
  const after = await eventsOf(store, appId)
  expect(after.filter((r) => r.uuid === u[1])).toHaveLength(1)
  expect(after.filter((r) => r.uuid === u[7]).map((r) => [r.event_name, r.install_uuid])).toEqual([
    ['Share', 'i-alice'],
  ])
  expect(after).toHaveLength(rows.length + 1)

  // alice moves to a new phone: her next event goes to it, though the embedded splitter remembers
  // the devices it looked up (the SDK builder tells it whom it writes).
  const sdkTx2 = await postSdk(sluice, appId, [
    sessionRow({
      install: 'i-alice-new',
      customer: 'alice',
      at: now - 500,
      country: 'jp',
      model: 'iPhone17,1',
    }),
  ])
  expect(await sdkReceiptDone(sluice, appId, sdkTx2)).toMatchObject({ state: 'done', accepted: 1 })
  const moved = uuid()
  const res3 = await postUpload(
    sluice,
    tenant.auth,
    lines([ev({ uuid: moved, customer_id: 'alice', event_name: 'Moved' })]),
  )
  const tx3 = ((await res3.json()) as { transaction_id: string }).transaction_id
  expect(await receiptDone(sluice, tenant.auth, tx3)).toMatchObject({
    state: 'done',
    accepted: 1,
    rejected: 0,
  })
  const movedRows = (await eventsOf(store, appId)).filter((r) => r.uuid === moved)
  expect(movedRows.map((r) => [r.install_uuid, r.country, r.model])).toEqual([
    ['i-alice-new', 'jp', 'iPhone17,1'],
  ])

  // Receipts are private to the org; unknown ids are 404.
  const foreign = await fetch(`${sluice.url}/v0/uploads/${transaction_id}`, {
    headers: { Authorization: other.auth },
  })
  expect(foreign.status).toBe(404)
  const unknown = await fetch(`${sluice.url}/v0/uploads/${'A'.repeat(43)}`, {
    headers: { Authorization: tenant.auth },
  })
  expect(unknown.status).toBe(404)
  // Transaction ids are case-sensitive tokens: another spelling is not one we issued.
  const upper = await fetch(`${sluice.url}/v0/uploads/${transaction_id.toUpperCase()}`, {
    headers: { Authorization: tenant.auth },
  })
  expect(upper.status).toBe(transaction_id === transaction_id.toUpperCase() ? 200 : 404)
  for (const malformed of [`{${transaction_id}}`, transaction_id.slice(0, 40), `${transaction_id}-`]) {
    const res = await fetch(`${sluice.url}/v0/uploads/${encodeURIComponent(malformed)}`, {
      headers: { Authorization: tenant.auth },
    })
    expect(res.status).toBe(400)
    expect(((await res.json()) as { error: string }).error).toMatch(/^transaction_id is malformed/)
  }

  return { tenant, appId }
}

/** What a 202 must not promise: refused up front with clear errors, the edge keeps serving. */
export async function runEdgeRefusals(sluice: InProcessSluice, auth: string) {
  const big = 'x'.repeat(300 * 1024)
  const tooBig = await postUpload(sluice, auth, big)
  expect(tooBig.status).toBe(413)
  expect(await tooBig.json()).toEqual({
    error: 'body must be smaller than 256 KB',
    errors: ['body must be smaller than 256 KB'],
  })
  const corrupt = await postUpload(sluice, auth, Buffer.from('not gzip at all'), {
    'Content-Type': 'application/x-gzip',
  })
  expect(corrupt.status).toBe(400)
  expect(await corrupt.json()).toEqual({
    error: 'body is not valid gzip',
    errors: ['body is not valid gzip'],
  })
  const truncated = gzipSync(Buffer.from('{"a":1}\n'.repeat(100))).subarray(0, 20)
  expect((await postUpload(sluice, auth, truncated, { 'Content-Type': 'application/x-gzip' })).status).toBe(
    400,
  )
  const encoded = await postUpload(sluice, auth, gzipSync('{"a":1}\n'), {
    'Content-Type': 'application/json',
    'Content-Encoding': 'gzip',
  })
  expect(encoded.status).toBe(202)
  const xml = await postUpload(sluice, auth, '<a/>', { 'Content-Type': 'text/xml' })
  expect(xml.status).toBe(415)
  expect(((await xml.json()) as { error: string }).error).toMatch(/application\/json or application\/x-gzip/)
  const empty = await postUpload(sluice, auth, '')
  expect(empty.status).toBe(400)
  const blank = await postUpload(sluice, auth, '\n\n')
  expect(blank.status).toBe(400)
  // The same bodies gzipped get the same answer as plain (issue 11).
  const gzipHeaders = { 'Content-Type': 'application/x-gzip' }
  for (const text of ['', '\n\n', ' \r\n\t ']) {
    const res = await postUpload(sluice, auth, gzipSync(text), gzipHeaders)
    expect(res.status).toBe(400)
    expect(await res.json()).toEqual({
      error: 'empty body: send one JSON object per line',
      errors: ['empty body: send one JSON object per line'],
    })
  }
  const bad = await postUpload(sluice, 'Basic ' + Buffer.from('nokey:nosecret').toString('base64'), '{}\n')
  expect(bad.status).toBe(401)
  const schema = await fetch(`${sluice.url}/schemas/events/v0.json`)
  expect(schema.status).toBe(200)
  const json = (await schema.json()) as { required: string[] }
  expect(json.required).toEqual(
    expect.arrayContaining(['schema_url', 'app_uuid', 'customer_id', 'event_name', 'event_time', 'uuid']),
  )
  expect((await fetch(`${sluice.url}/healthz`)).status).toBe(200)
}

/**
 * Exactly once however a uuid is spelled (issue 18): one event uuid in upper case, without dashes
 * and in both, in one upload and across uploads, server-side and from the SDK, is stored once, in
 * canonical form, and the receipts count the copies as duplicates. An SDK install uuid in another
 * spelling continues the same device.
 */
export async function runUuidSpellings(sluice: InProcessSluice, store: Store, suffix: string) {
  const appId = `spell-${suffix}`
  const tenant = await sluice.tenant(`spell-${suffix}`, [appId])
  const now = Date.now()
  const install = '9A1B2C3D-4E5F-4A6B-8C7D-0E1F2A3B4C5D'
  const sdkTx = await postSdk(sluice, appId, [
    sessionRow({ install, customer: 'carol', at: now - 5000, country: 'de', model: 'Pixel 8' }),
  ])
  await sdkReceiptDone(sluice, appId, sdkTx)

  const canonical = uuid()
  const spellings = [
    canonical.toUpperCase(),
    canonical.replaceAll('-', ''),
    canonical.replaceAll('-', '').toUpperCase(),
  ]
  const event = (id: string, name: string) => ({
    schema_url: SCHEMA_URL,
    app_uuid: appId,
    customer_id: 'carol',
    event_name: name,
    event_time: now,
    uuid: id,
  })
  // One upload: the first spelling is stored, the other three are duplicates in the body.
  const res1 = await postUpload(
    sluice,
    tenant.auth,
    lines([event(canonical, 'first'), ...spellings.map((id) => event(id, 'copy'))]),
  )
  const receipt1 = await receiptDone(
    sluice,
    tenant.auth,
    ((await res1.json()) as { transaction_id: string }).transaction_id,
  )
  expect(receipt1).toMatchObject({ state: 'done', lines: 4, accepted: 1, rejected: 3 })
  expect(receipt1.rejected_lines.map((r) => [r.line, r.reason])).toEqual([
    [2, 'duplicate_in_body'],
    [3, 'duplicate_in_body'],
    [4, 'duplicate_in_body'],
  ])
  // Across uploads, each spelling alone (gzip for one of them): each is a duplicate of the stored event.
  for (const [i, id] of spellings.entries()) {
    const body = lines([event(id, 'retry')])
    const res =
      i === 0
        ? await postUpload(sluice, tenant.auth, gzipSync(body), { 'Content-Type': 'application/x-gzip' })
        : await postUpload(sluice, tenant.auth, body)
    expect(res.status).toBe(202)
    const receipt = await receiptDone(
      sluice,
      tenant.auth,
      ((await res.json()) as { transaction_id: string }).transaction_id,
    )
    expect(receipt).toMatchObject({ state: 'done', lines: 1, accepted: 0, rejected: 1 })
    expect(receipt.rejected_lines.map((r) => r.reason)).toEqual(['duplicate'])
  }
  // The SDK route shares the index: the same uuid from an SDK row is a duplicate too.
  const sdkDup = await postSdk(sluice, appId, [
    { type: 'e', uuid: spellings[2], install_uuid: install.toLowerCase(), at_millis: now, name: 'sdk-copy' },
  ])
  const sdkReceipt = await sdkReceiptDone(sluice, appId, sdkDup)
  expect(sdkReceipt).toMatchObject({ accepted: 0, rejected: 1 })
  expect(sdkReceipt.rejected_lines.map((r) => r.reason)).toEqual(['duplicate'])

  const stored = await eventsOf(store, appId)
  expect(stored.map((e) => [e.uuid, e.event_name, e.install_uuid])).toEqual([
    [canonical, 'first', install.toLowerCase()],
  ])
  // The install uuid sent in upper case and then in lower case is one device, stored canonically.
  const devices = await store.query<{ install_uuid: string }>(
    `SELECT install_uuid FROM devices FINAL WHERE app_id = {app:String}`,
    { app: appId },
  )
  expect(devices).toEqual([{ install_uuid: install.toLowerCase() }])
}

/**
 * What clients of the original service send (issue 12): uploads to {events_url}/v0|v1/uploads
 * with events_url ending in /events, and schema_url naming v1.json. Each path is the one endpoint,
 * with its receipt under the same path.
 */
export async function runOriginalClientPaths(sluice: InProcessSluice, store: Store, suffix: string) {
  const appId = `paths-${suffix}`
  const tenant = await sluice.tenant(`paths-${suffix}`, [appId])
  const now = Date.now()
  await sdkReceiptDone(
    sluice,
    appId,
    await postSdk(sluice, appId, [
      sessionRow({ install: 'i-erin', customer: 'erin', at: now - 5000, country: 'se', model: 'Pixel 7' }),
    ]),
  )
  const sent: string[] = []
  for (const [path, version] of [
    ['/events/v1/uploads', 'v1'],
    ['/events/v0/uploads', 'v0'],
    ['/v1/uploads', 'v1'],
  ] as const) {
    const id = uuid()
    sent.push(id)
    const res = await fetch(`${sluice.url}${path}`, {
      method: 'POST',
      headers: { Authorization: tenant.auth, 'Content-Type': 'application/json' },
      body: lines([
        {
          schema_url: `https://analytics.example.com/schemas/events/${version}.json`,
          app_uuid: appId,
          customer_id: 'erin',
          event_name: `via ${path}`,
          event_time: now,
          uuid: id,
        },
      ]),
    })
    expect(res.status).toBe(202)
    const { transaction_id } = (await res.json()) as { transaction_id: string }
    const receipt = await receiptDone(sluice, tenant.auth, transaction_id, path)
    expect(receipt).toMatchObject({ lines: 1, accepted: 1, rejected: 0 })
  }
  const stored = await eventsOf(store, appId)
  expect(stored.map((e) => e.uuid).sort()).toEqual([...sent].sort())
  const schema = (await (await fetch(`${sluice.url}/schemas/events/v1.json`)).json()) as { $id: string }
  expect(schema.$id).toBe('/schemas/events/v1.json')
}

/**
 * The receipt of a split server upload says when each stage was done with it (migration 030), in
 * the order the pipeline goes, between its 202 and the moment the receipt was read done; the
 * receipt row holds the same moments; an SDK receipt has none.
 */
export async function runReceiptStages(sluice: InProcessSluice, store: Store, suffix: string) {
  const appId = `stages-${suffix}`
  const tenant = await sluice.tenant(`stages-org-${suffix}`, [appId])
  const now = Date.now()
  const sdkTx = await postSdk(sluice, appId, [
    sessionRow({ install: 'i-stages', customer: 'dana', at: now - 60_000, country: 'se', model: 'Pixel 8' }),
  ])
  const sdkReceipt = await sdkReceiptDone(sluice, appId, sdkTx)
  expect(sdkReceipt).not.toHaveProperty('stages')

  const event = {
    schema_url: SCHEMA_URL,
    app_uuid: appId,
    customer_id: 'dana',
    event_name: 'Paid',
    event_time: now,
  }
  const posted = Date.now()
  const res = await postUpload(
    sluice,
    tenant.auth,
    lines([{ ...event, uuid: uuid() }, { ...event, uuid: uuid() }, 'not json']),
  )
  expect(res.status).toBe(202)
  const { transaction_id: tx } = (await res.json()) as { transaction_id: string }
  const receipt = (await receiptDone(sluice, tenant.auth, tx)) as Receipt & {
    received_at: string
    stages?: Record<string, string>
  }
  const read = Date.now()
  expect(receipt).toMatchObject({ state: 'done', lines: 3, accepted: 2, rejected: 1 })
  expect(Object.keys(receipt.stages ?? {})).toEqual([
    'consumed_at',
    'parsed_at',
    'processed_at',
    'written_at',
    'recorded_at',
  ])
  const at = (iso: string) => {
    expect(iso).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
    return Date.parse(iso)
  }
  const stages = receipt.stages!
  const moments = [
    at(receipt.received_at),
    at(stages.consumed_at!),
    at(stages.parsed_at!),
    at(stages.processed_at!),
    at(stages.written_at!),
    at(stages.recorded_at!),
  ]
  // In the pipeline's order, all after the upload was posted and before its receipt was read done.
  expect(moments).toEqual([...moments].sort((a, b) => a - b))
  expect(moments[0]!).toBeGreaterThanOrEqual(posted - 5)
  expect(moments.at(-1)!).toBeLessThanOrEqual(read)

  const rows = await store.query<Record<string, number | string | null>>(
    `SELECT toUnixTimestamp64Milli(consumed_at) AS consumed_at, toUnixTimestamp64Milli(parsed_at) AS parsed_at,
            toUnixTimestamp64Milli(written_at) AS written_at, toUnixTimestamp64Milli(recorded_at) AS recorded_at
     FROM upload_receipts WHERE transaction_id = {tx:String}`,
    { tx },
  )
  expect(rows.map((r) => Object.values(r).map(Number))).toEqual([
    [moments[1], moments[2], moments[4], moments[5]],
  ])
  const sdkRows = await store.query<{ consumed_at: string | null }>(
    'SELECT consumed_at FROM upload_receipts WHERE transaction_id = {tx:String}',
    { tx: sdkTx },
  )
  expect(sdkRows).toEqual([{ consumed_at: null }])
}
