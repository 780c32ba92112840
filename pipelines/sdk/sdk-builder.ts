import type { Bus, BusRecord, RecordBatch } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import type { CpuRunner } from '../cpu/tasks.ts'
import { blockMessages, eventPartitions, type BlockEvent } from '../events/event-block.ts'
import { rowBinaryEventRow, type EventRow } from '../events/event-row.ts'
import {
  MAX_REJECTED_LINES_PER_UPLOAD,
  receiptRow,
  recordRejects,
  rejectRow,
  type RejectRow,
} from '../events/upload-outcomes.ts'
import type { UploadHeaders } from '../events/upload-headers.ts'
import {
  applyRowToCustomer,
  applyRowToDevice,
  customerStateKey,
  deviceKey,
  emptyDevice,
  type CustomerState,
  type DeviceState,
} from './device-state.ts'
import type { SdkRow } from './validate-sdk-row.ts'
import type { DeviceCache } from '../events/device-cache.ts'
import type { UploadRef } from '../events/writer-item.ts'

export interface SdkBuilderDeps {
  pool: CpuRunner
  store: Store
  bus: Bus
  eventsTopic: string
  maxInflatedBytes: number
  /** The splitter's cache of customers' devices (embedded engine): told of every write of them. */
  devices?: DeviceCache
}

interface ParsedSdkUpload {
  headers: UploadHeaders
  rows: SdkRow[]
  /** The first rejected lines (at most MAX_REJECTED_LINES_PER_UPLOAD). */
  rejects: RejectRow[]
  /** Every rejected line. */
  rejected: number
  lines: number
}

/**
 * Stage 1 of SDK ingestion. Records are keyed by app, so this consumer is the only writer of its
 * apps' device state: it reads the current state of the devices and customers in the batch,
 * applies the rows in time order (pure), and writes the new versions, the sessions and the raw log
 * rows; SDK events go on to the events topic for the exactly-once writer. All writes are
 * idempotent (versioned state merged with max/min, ReplacingMergeTree by natural keys), so a
 * replay after a crash converges to the same state.
 */
export function sdkBuilder(deps: SdkBuilderDeps) {
  const partitions = eventPartitions(deps.bus, deps.eventsTopic)
  return async (batch: RecordBatch): Promise<void> => {
    const uploads = await Promise.all(batch.records.map((r) => parse(deps, r)))
    const refs = new Map<ParsedSdkUpload, UploadRef>(
      uploads.map((u) => [
        u,
        { tx: u.headers.tx, recv: Number(u.headers.recv), org: Number(u.headers.org), source: 'sdk' },
      ]),
    )
    const rows = uploads.flatMap((u) => u.rows.map((row) => ({ upload: u, row, app: u.headers.app ?? '' })))
    rows.sort((a, b) => a.row.at_millis - b.row.at_millis || a.row.line - b.row.line)

    const devices = await loadDevices(
      deps.store,
      rows.map((r) => ({ app: r.app, install: r.row.install_uuid })),
    )
    const customerIds = new Set<string>()
    for (const { app, row } of rows) {
      if (row.customer_id) customerIds.add(customerStateKey(app, row.customer_id))
      const known = devices.get(deviceKey(app, row.install_uuid))?.customer_id
      if (known) customerIds.add(customerStateKey(app, known))
    }
    const customers = await loadCustomers(deps.store, [...customerIds])

    const changedDevices = new Set<string>()
    const changedCustomers = new Set<string>()
    const forward: BlockEvent[] = []
    const rawLog: object[] = []
    const sessions: object[] = []
    for (const { upload, row, app } of rows) {
      const dKey = deviceKey(app, row.install_uuid)
      const device = applyRowToDevice(devices.get(dKey) ?? emptyDevice(app, row.install_uuid), row)
      devices.set(dKey, device)
      changedDevices.add(dKey)
      const customer = row.customer_id || device.customer_id
      if (customer) {
        const cKey = customerStateKey(app, customer)
        customers.set(cKey, applyRowToCustomer(customers.get(cKey), row, device, app, customer))
        changedCustomers.add(cKey)
      }
      rawLog.push(rawLogRow(upload.headers, app, row, customer))
      if (row.type === 's') {
        sessions.push({
          app_id: app,
          session_uuid: row.session_uuid || row.uuid,
          install_uuid: row.install_uuid,
          customer_id: customer,
          started_at: row.at_millis,
          app_ver: row.app_ver || device.app_version,
          os_ver: row.os_ver || device.os_version,
          platform: row.platform || device.platform,
          country: row.country || device.country,
        })
      }
      if (row.type === 'e') forward.push(eventToForward(refs.get(upload)!, app, row, customer, device))
    }

    const now = Date.now()
    const deviceRows = [...changedDevices].map((k) => bumpVersion(devices.get(k)!, now))
    const customerRows = [...changedCustomers].map((k) => bumpVersion(customers.get(k)!, now))
    if (forward.length > 0)
      await deps.bus.produce(deps.eventsTopic, blockMessages(forward, await partitions()))
    await Promise.all([
      deps.store.insert('raw_log', rawLog),
      deps.store.insert('sessions', sessions),
      deps.store.insert('devices', deviceRows),
    ])
    // Written last among the state: server-side events are attributed from this table. The
    // splitter's cache forgets these customers before the write and after it (DeviceCache says why).
    deps.devices?.forget(customerRows)
    try {
      await deps.store.insert('customer_devices', customerRows)
    } finally {
      deps.devices?.forget(customerRows)
    }
    await recordRejects(
      deps.store,
      uploads.flatMap((u) => u.rejects),
    )
    await deps.store.insert(
      'upload_receipts',
      uploads.map((u) => {
        const events = u.rows.filter((r) => r.type === 'e').length
        const counts = {
          lines: u.lines,
          forwarded: events,
          direct: u.rows.length - events,
          rejected: u.rejected,
        }
        return receiptRow(u.headers, counts, now)
      }),
    )
  }
}

async function parse(deps: SdkBuilderDeps, record: BusRecord): Promise<ParsedSdkUpload> {
  const headers = record.headers as unknown as UploadHeaders
  const result = await deps.pool.run({
    kind: 'sdk-upload',
    body: record.value,
    encoding: headers.enc,
    receivedAt: Number(headers.recv),
    maxInflatedBytes: deps.maxInflatedBytes,
    maxRejects: MAX_REJECTED_LINES_PER_UPLOAD,
  })
  if (result.kind === 'sdk-upload') {
    return {
      headers,
      rows: result.rows,
      rejects: result.rejects.map((r) => rejectRow(headers, r.line, r.uuid, r.reason, r.detail)),
      rejected: result.rejected,
      lines: result.lines,
    }
  }
  const detail = result.kind === 'unreadable' ? result.detail : 'unexpected task result'
  return {
    headers,
    rows: [],
    rejects: [rejectRow(headers, 0, null, 'unreadable', detail)],
    rejected: 1,
    lines: 0,
  }
}

function eventToForward(
  upload: UploadRef,
  app: string,
  row: SdkRow,
  customer: string,
  device: DeviceState,
): BlockEvent {
  const event: EventRow = {
    app_id: app,
    uuid: row.uuid,
    customer_id: customer,
    event_name: row.name,
    event_time: row.at_millis,
    received_at: upload.recv,
    attributes: row.attributes,
    ltv_change: 0,
    install_uuid: row.install_uuid,
    device_uuid: row.device_uuid || device.device_uuid,
    session_uuid: row.session_uuid,
    country: row.country || device.country,
    language: row.language || device.language,
    app_version: row.app_ver || device.app_version,
    os_version: row.os_ver || device.os_version,
    platform: row.platform || device.platform,
    model: row.model || device.model,
    device_timezone: row.device_timezone || device.device_timezone,
    source: 'sdk',
    transaction_id: upload.tx,
  }
  return { app, uuid: row.uuid, line: row.line, upload, row: rowBinaryEventRow(event) }
}

function rawLogRow(headers: UploadHeaders, app: string, row: SdkRow, customer: string) {
  const { line: _line, ...fields } = row
  return {
    app_id: app,
    type: row.type,
    uuid: row.uuid,
    at: row.at_millis,
    install_uuid: row.install_uuid,
    device_uuid: row.device_uuid,
    session_uuid: row.session_uuid,
    customer_id: customer,
    sent_customer_id: row.customer_id,
    name: row.name,
    attributes: row.attributes,
    app_ver: row.app_ver,
    os_ver: row.os_ver,
    platform: row.platform,
    model: row.model,
    country: row.country,
    language: row.language,
    device_timezone: row.device_timezone,
    push_status: row.push_status,
    // Every log field as validated, so the hourly export can write the row back out faithfully.
    row: JSON.stringify(fields),
    transaction_id: headers.tx,
    received_at: Number(headers.recv),
  }
}

function bumpVersion<T extends { version: number }>(state: T, now: number): T {
  return { ...state, version: Math.max(now, state.version + 1) }
}

async function loadDevices(store: Store, keys: { app: string; install: string }[]) {
  const states = new Map<string, DeviceState>()
  if (keys.length === 0) return states
  const wanted = new Set(keys.map((k) => deviceKey(k.app, k.install)))
  const installs = stringSet('installs', [...new Set(keys.map((k) => k.install))])
  const rows = await store.query<DeviceState>(
    `SELECT app_id, install_uuid, device_uuid, customer_id, toUnixTimestamp64Milli(last_active_at) AS last_active_at,
            app_version, os_version, platform, model, country, language, device_timezone, push_token, push_status,
            advertising_id, limit_advertising, version
     FROM devices FINAL
     WHERE app_id IN {apps:Array(String)} AND install_uuid IN ${installs.sql}`,
    { apps: [...new Set(keys.map((k) => k.app))], installs: installs.value },
  )
  for (const row of rows) {
    const key = deviceKey(row.app_id, row.install_uuid)
    if (wanted.has(key))
      states.set(key, {
        ...row,
        last_active_at: Number(row.last_active_at),
        limit_advertising: Number(row.limit_advertising) === 1 ? 1 : 0,
        version: Number(row.version),
      })
  }
  return states
}

async function loadCustomers(store: Store, keys: string[]) {
  const states = new Map<string, CustomerState>()
  if (keys.length === 0) return states
  const pairs = keys.map((k) => k.split('\n') as [string, string])
  const wanted = new Set(keys)
  const customers = stringSet('customers', [...new Set(pairs.map((p) => p[1]))])
  const rows = await store.query<CustomerState>(
    `SELECT app_id, customer_id, install_uuid, device_uuid, session_uuid,
            toUnixTimestamp64Milli(last_active_at) AS last_active_at,
            toUnixTimestamp64Milli(first_session_at) AS first_session_at,
            toUnixTimestamp64Milli(last_session_at) AS last_session_at,
            app_version, os_version, platform, model, country, language, device_timezone, push_token, push_status,
            user_type, version
     FROM customer_devices FINAL
     WHERE app_id IN {apps:Array(String)} AND customer_id IN ${customers.sql}`,
    { apps: [...new Set(pairs.map((p) => p[0]))], customers: customers.value },
  )
  for (const row of rows) {
    const key = customerStateKey(row.app_id, row.customer_id)
    if (!wanted.has(key)) continue
    states.set(key, {
      ...row,
      last_active_at: Number(row.last_active_at),
      first_session_at: row.first_session_at === null ? null : Number(row.first_session_at),
      last_session_at: row.last_session_at === null ? null : Number(row.last_session_at),
      version: Number(row.version),
    })
  }
  return states
}
