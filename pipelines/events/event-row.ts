import { keyHashes } from './key-filter.ts'
import { RowBinaryReader, RowBinaryWriter } from './row-binary.ts'
import type { ValidEvent } from './validate-event.ts'

/** A row of the `events` table. Column names are a public contract. */
export interface EventRow extends DeviceDims {
  app_id: string
  uuid: string
  customer_id: string
  event_name: string
  /** ms since epoch; DateTime64(3) parses integers as milliseconds. */
  event_time: number
  received_at: number
  attributes: Record<string, string>
  ltv_change: number
  source: 'server' | 'sdk'
  transaction_id: string
}

/** The dimensions of a device an event is attributed to: columns of `events` and `customer_devices`. */
export interface DeviceDims {
  install_uuid: string
  device_uuid: string
  session_uuid: string
  country: string
  language: string
  app_version: string
  os_version: string
  platform: string
  model: string
  device_timezone: string
}

export const eventKey = (appId: string, uuid: string) => `${appId}\n${uuid}`

/**
 * Validated events as the CPU pool hands them to the splitter: columns of identity fields, plus
 * each event's `OWN_COLUMNS` already written as RowBinary values in that order (uuid, customer_id,
 * event_name, event_time, attributes, ltv_change), all in one buffer (`ownEnd[i]` is where event
 * i's values end; they start where i-1's end). A few columns cross the thread boundary far more
 * cheaply than one object per event, and the splitter only copies the upload's and the device's
 * values around each slice: the event is serialised once, on the pool, in the form the engine
 * loads, and never becomes a string on the main thread.
 */
export interface PackedEvents {
  /** Each event's line in the upload. */
  line: Uint32Array
  /**
   * The upload's distinct apps and customers, and each event's index into them: a body names a
   * few apps and a few hundred customers thousands of times, and the splitter's thread receives
   * (structured clone) and hashes each distinct string once instead of once per event.
   */
  apps: string[]
  appIndex: Uint32Array
  customers: string[]
  customerIndex: Uint32Array
  uuid: string[]
  own: Uint8Array
  ownEnd: Uint32Array
  /**
   * The filter of stored keys' two hashes of each event's (app, uuid), h1 then h2 (`keyHashes`):
   * hashed here, so the event store's thread only tests bits.
   */
  keyHash: Uint32Array
}

/** Event `i`'s app. */
export const appOf = (events: PackedEvents, i: number): string => events.apps[events.appIndex[i]!]!

/** Event `i`'s customer. */
export const customerOf = (events: PackedEvents, i: number): string =>
  events.customers[events.customerIndex[i]!]!

export const noPackedEvents = (): PackedEvents => ({
  line: new Uint32Array(0),
  apps: [],
  appIndex: new Uint32Array(0),
  customers: [],
  customerIndex: new Uint32Array(0),
  uuid: [],
  own: new Uint8Array(0),
  ownEnd: new Uint32Array(0),
  keyHash: new Uint32Array(0),
})

export function packEvents(events: readonly ValidEvent[]): PackedEvents {
  const packer = new EventPacker(events.length)
  for (const e of events) packer.add(e)
  return packer.packed()
}

/**
 * PackedEvents built one event at a time, as each line is validated (validateEventBody's
 * `onEvent`): the parsed line and its ValidEvent are garbage as soon as the event is packed. Held
 * for the whole body instead (7,400 events of a bench gzip body, ~5 MB), they outlived the young
 * generation's scavenges (4 MB semi-spaces, docs/memory.md), were copied and promoted, and the old
 * generation's collections (on V8's helper threads) paid for them again.
 */
/** What the packer reads of a line scanner (EventLineScanner): the event it scanned last. */
export interface ScannedEvent {
  readonly app: string
  readonly customer: string
  readonly uuid: string
  /** Writes the event's own values (OWN_COLUMNS) from the line's bytes. */
  writeOwn(out: RowBinaryWriter): void
}

export class EventPacker {
  private readonly line: number[] = []
  private readonly appIndex: number[] = []
  private readonly apps = new Map<string, number>()
  private readonly customerIndex: number[] = []
  private readonly customers = new Map<string, number>()
  private readonly uuid: string[] = []
  private readonly ownEnd: number[] = []
  private readonly out: RowBinaryWriter

  constructor(expectedEvents = 0) {
    // ~130 bytes of RowBinary per event: one allocation for most bodies.
    this.out = new RowBinaryWriter(Math.max(1024, expectedEvents * 160))
  }

  add(e: ValidEvent): void {
    this.identify(e.line, e.app_uuid, e.customer_id, e.uuid)
    writeOwnValues(this.out, e.uuid, e.customer_id, e.event_name, e.event_time, e.attributes, e.ltv_change)
    this.ownEnd.push(this.out.length)
  }

  /** The event `scanner` scanned last, its own values written from the line's bytes. */
  addScanned(scanner: ScannedEvent, line: number): void {
    this.identify(line, scanner.app, scanner.customer, scanner.uuid)
    scanner.writeOwn(this.out)
    this.ownEnd.push(this.out.length)
  }

  /** The events added so far, packed (call once). */
  packed(): PackedEvents {
    const apps = [...this.apps.keys()]
    return {
      line: Uint32Array.from(this.line),
      apps,
      appIndex: Uint32Array.from(this.appIndex),
      customers: [...this.customers.keys()],
      customerIndex: Uint32Array.from(this.customerIndex),
      uuid: this.uuid,
      own: this.out.view(),
      ownEnd: Uint32Array.from(this.ownEnd),
      keyHash: keyHashes(apps, this.uuid, this.appIndex),
    }
  }

  private identify(line: number, app: string, customer: string, uuid: string): void {
    this.line.push(line)
    this.appIndex.push(indexIn(this.apps, app))
    this.customerIndex.push(indexIn(this.customers, customer))
    this.uuid.push(uuid)
  }
}

/** `value`'s index among the distinct values of `seen` (in order of first appearance), added if new. */
function indexIn(seen: Map<string, number>, value: string): number {
  let index = seen.get(value)
  if (index === undefined) seen.set(value, (index = seen.size))
  return index
}

function writeOwnValues(
  out: RowBinaryWriter,
  uuid: string,
  customerId: string,
  eventName: string,
  eventTime: number,
  attributes: Record<string, string>,
  ltvChange: number,
): void {
  out.string(uuid)
  out.string(customerId)
  out.string(eventName)
  out.int64(eventTime)
  out.stringMap(attributes)
  out.int64(ltvChange)
}

export const DEVICE_DIMENSIONS = [
  'install_uuid',
  'device_uuid',
  'session_uuid',
  'country',
  'language',
  'app_version',
  'os_version',
  'platform',
  'model',
  'device_timezone',
] as const satisfies readonly (keyof DeviceDims)[]

/** The columns the splitter knows per upload: the head of a row (`serverRows`). */
export const UPLOAD_COLUMNS = ['app_id', 'received_at', 'source', 'transaction_id'] as const

/** The event's own columns: the values the CPU pool serialises once (`packEvents`). */
export const OWN_COLUMNS = [
  'uuid',
  'customer_id',
  'event_name',
  'event_time',
  'attributes',
  'ltv_change',
] as const

/**
 * The columns of an `events` row as the pipeline inserts it (RowBinary, values in this order). The
 * order groups what is known per upload, per event and per device, so the splitter assembles a row
 * from three ready pieces: the upload's head, the event's own values from the CPU pool, the
 * device's tail.
 */
export const EVENT_COLUMNS = [
  ...UPLOAD_COLUMNS,
  ...OWN_COLUMNS,
  ...DEVICE_DIMENSIONS,
] as const satisfies readonly (keyof EventRow)[]

/**
 * The type of each column as the rows are written: LowCardinality columns of `events` go as
 * String into `events_ingest` (migration 005), whose view converts them as whole columns.
 */
const EVENT_COLUMN_TYPES: Record<(typeof EVENT_COLUMNS)[number], string> = {
  app_id: 'String',
  received_at: "DateTime64(3, 'UTC')",
  source: 'String',
  transaction_id: 'String',
  uuid: 'String',
  customer_id: 'String',
  event_name: 'String',
  event_time: "DateTime64(3, 'UTC')",
  attributes: 'Map(String, String)',
  ltv_change: 'Int64',
  install_uuid: 'String',
  device_uuid: 'String',
  session_uuid: 'String',
  country: 'String',
  language: 'String',
  app_version: 'String',
  os_version: 'String',
  platform: 'String',
  model: 'String',
  device_timezone: 'String',
}

/** [column, type] of the rows the writer inserts: the RowBinary layout of an events row. */
export const EVENT_ROW_BINARY: readonly (readonly [string, string])[] = EVENT_COLUMNS.map((c) => [
  c,
  EVENT_COLUMN_TYPES[c],
])

/** The head of a server row: the upload's values for one app (`UPLOAD_COLUMNS`). */
export function uploadHead(
  app: string,
  receivedAt: number,
  source: 'server' | 'sdk',
  transactionId: string,
): Buffer {
  const out = new RowBinaryWriter(256)
  out.string(app)
  out.int64(receivedAt)
  out.string(source)
  out.string(transactionId)
  return Buffer.from(out.view())
}

/** A device's values, the tail of a row (`DEVICE_DIMENSIONS`). */
export function deviceTail(d: DeviceDims): Buffer {
  const out = new RowBinaryWriter(512)
  for (const column of DEVICE_DIMENSIONS) out.string(d[column])
  return Buffer.from(out.view())
}

/** One whole `events` row in RowBinary (`EVENT_COLUMNS`): the SDK builder's rows, and old blocks'. */
export function rowBinaryEventRow(row: EventRow): Buffer {
  const out = new RowBinaryWriter(1024)
  out.string(row.app_id)
  out.int64(row.received_at)
  out.string(row.source)
  out.string(row.transaction_id)
  writeOwnValues(
    out,
    row.uuid,
    row.customer_id,
    row.event_name,
    row.event_time,
    row.attributes,
    row.ltv_change,
  )
  for (const column of DEVICE_DIMENSIONS) out.string(row[column])
  return Buffer.from(out.view())
}

/** An `events` row read back from its RowBinary (`rowBinaryEventRow`'s inverse; throws if cut short). */
export function eventRowFromRowBinary(bytes: Buffer): EventRow {
  const r = new RowBinaryReader(bytes)
  const row = {
    app_id: r.string(),
    received_at: r.int64(),
    source: r.string() as EventRow['source'],
    transaction_id: r.string(),
    uuid: r.string(),
    customer_id: r.string(),
    event_name: r.string(),
    event_time: r.int64(),
    attributes: r.stringMap(),
    ltv_change: r.int64(),
  } as EventRow
  for (const column of DEVICE_DIMENSIONS) row[column] = r.string()
  if (!r.done) throw new RangeError('bytes left over after an events row')
  return row
}

/** The columns of a row written before RowBinary (JSONCompactEachRow arrays of these columns). */
export function eventRowFromCompact(values: readonly unknown[]): EventRow {
  return Object.fromEntries(EVENT_COLUMNS.map((column, i) => [column, values[i]])) as unknown as EventRow
}
