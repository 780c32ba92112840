import type { Bus, BusRecord, RecordBatch } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import type { CpuRunner } from '../cpu/tasks.ts'
import { attributeEvent, serverRows } from './attribute-event.ts'
import { customerKey, lookupDevices, waitForSdkBacklog } from './device-lookup.ts'
import { blockMessages, eventPartitions, type BlockEvent, type UploadRef } from './event-block.ts'
import { noPackedEvents, type DeviceDims, type PackedEvents } from './event-row.ts'
import {
  MAX_REJECTED_LINES_PER_UPLOAD,
  receiptRow,
  recordRejects,
  rejectRow,
  type RejectRow,
} from './upload-outcomes.ts'
import type { UploadHeaders } from './upload-headers.ts'

/** The one thing the splitter asks of the control plane. */
export interface AppDirectory {
  getApp(appId: string): Promise<{ org_id: number } | undefined>
}

export interface SplitterDeps {
  pool: CpuRunner
  store: Store
  bus: Bus
  /** Which org owns an app (the control store, through its cache). */
  apps: AppDirectory
  eventsTopic: string
  /** The SDK pipeline whose backlog must be applied before a customer is declared unknown. */
  sdk: { group: string; topic: string; waitMs: number }
  pastWindowMs: number
  futureWindowMs: number
  maxInflatedBytes: number
  onRejected?: (reason: string, count: number) => void
}

interface ParsedUpload {
  record: BusRecord
  headers: UploadHeaders
  events: PackedEvents
  /** The first rejected lines (at most MAX_REJECTED_LINES_PER_UPLOAD). */
  rejects: RejectRow[]
  /** Every rejected line. */
  rejected: number
  lines: number
}

/**
 * Stage 1 of server-side ingestion: split each upload into lines, validate them (on the CPU pool),
 * check the apps, attribute each event to its customer's last device, and forward the events to
 * the events topic in blocks routed by app + uuid. Rejected lines and the upload's receipt are recorded after
 * the forward is durable; the batch is committed only after all of it (a replay redoes it all and
 * every write is idempotent).
 */
export function serverUploadSplitter(deps: SplitterDeps) {
  const partitions = eventPartitions(deps.bus, deps.eventsTopic)
  return async (batch: RecordBatch): Promise<void> => {
    const uploads = await Promise.all(batch.records.map((record) => parse(deps, record)))

    const appIds = new Set<string>()
    for (const upload of uploads) for (const app of upload.events.app) appIds.add(app)
    const appOrg = await appOwners(deps.apps, appIds)
    const devices = await attributionDevices(deps, uploads, appOrg)

    const forward: BlockEvent[] = []
    const rejects: RejectRow[] = []
    const receipts: object[] = []
    const processedAt = Date.now()
    const deviceTails = new Map<DeviceDims, Buffer>()
    for (const upload of uploads) {
      const orgId = Number(upload.headers.org)
      const receivedAt = Number(upload.headers.recv)
      let forwarded = 0
      let rejected = upload.rejected
      const uploadRejects = upload.rejects
      const ref: UploadRef = { tx: upload.headers.tx, recv: receivedAt, org: orgId, source: 'server' }
      const context = { orgId, appOrg, devices }
      const rowOf = serverRows(upload.events, { receivedAt, transactionId: upload.headers.tx }, deviceTails)
      for (let i = 0; i < upload.events.uuid.length; i++) {
        const result = attributeEvent(upload.events, i, context)
        if (result.kind === 'reject') {
          rejected++
          if (uploadRejects.length < MAX_REJECTED_LINES_PER_UPLOAD)
            uploadRejects.push(
              rejectRow(
                upload.headers,
                result.line,
                result.uuid,
                result.reason,
                result.detail,
                result.app_id,
              ),
            )
          continue
        }
        forward.push({
          app: result.app_id,
          uuid: result.uuid,
          line: result.line,
          upload: ref,
          row: rowOf(i, result.app_id, result.device),
        })
        forwarded++
      }
      // No spread: an argument list has a size limit, an upload's rejects do not.
      for (const r of uploadRejects) rejects.push(r)
      receipts.push(
        receiptRow(upload.headers, { lines: upload.lines, forwarded, direct: 0, rejected }, processedAt),
      )
    }
    if (forward.length > 0)
      await deps.bus.produce(deps.eventsTopic, blockMessages(forward, await partitions()))
    await recordRejects(deps.store, rejects)
    await deps.store.insert('upload_receipts', receipts)
    if (deps.onRejected) {
      const byReason = new Map<string, number>()
      for (const r of rejects) byReason.set(r.reason, (byReason.get(r.reason) ?? 0) + 1)
      for (const [reason, n] of byReason) deps.onRejected(reason, n)
    }
  }
}

async function parse(deps: SplitterDeps, record: BusRecord): Promise<ParsedUpload> {
  const headers = record.headers as unknown as UploadHeaders
  const result = await deps.pool.run({
    kind: 'server-upload',
    body: record.value,
    encoding: headers.enc,
    receivedAt: Number(headers.recv),
    pastWindowMs: deps.pastWindowMs,
    futureWindowMs: deps.futureWindowMs,
    maxInflatedBytes: deps.maxInflatedBytes,
    maxRejects: MAX_REJECTED_LINES_PER_UPLOAD,
  })
  if (result.kind === 'server-upload') {
    return {
      record,
      headers,
      events: result.events,
      rejects: result.rejects.map((r) => rejectRow(headers, r.line, r.uuid, r.reason, r.detail)),
      rejected: result.rejected,
      lines: result.lines,
    }
  }
  // The edge checked the body already; this only happens if the limits changed in between.
  const detail = result.kind === 'unreadable' ? result.detail : 'unexpected task result'
  const reason = result.kind === 'unreadable' ? result.reason : 'unreadable'
  return {
    record,
    headers,
    events: noPackedEvents(),
    rejects: [rejectRow(headers, 0, null, reason, detail)],
    rejected: 1,
    lines: 0,
  }
}

async function appOwners(apps: AppDirectory, appIds: ReadonlySet<string>): Promise<Map<string, number>> {
  const owners = new Map<string, number>()
  for (const appId of appIds) {
    const app = await apps.getApp(appId)
    if (app) owners.set(appId, app.org_id)
  }
  return owners
}

async function attributionDevices(
  deps: SplitterDeps,
  uploads: ParsedUpload[],
  appOrg: Map<string, number>,
): Promise<Map<string, DeviceDims>> {
  const pairs = new Map<string, { app: string; customer: string }>()
  for (const upload of uploads) {
    const { app, customer } = upload.events
    const org = Number(upload.headers.org)
    for (let i = 0; i < app.length; i++) {
      if (appOrg.get(app[i]!) === org)
        pairs.set(customerKey(app[i]!, customer[i]!), { app: app[i]!, customer: customer[i]! })
    }
  }
  const devices = await lookupDevices(deps.store, pairs)
  const missing = new Map([...pairs].filter(([key]) => !devices.has(key)))
  if (missing.size > 0) {
    await waitForSdkBacklog(deps.bus, deps.sdk.group, deps.sdk.topic, deps.sdk.waitMs)
    for (const [key, dims] of await lookupDevices(deps.store, missing)) devices.set(key, dims)
  }
  return devices
}
