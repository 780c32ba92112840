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

/**
 * The headers of a writer item, one event of an event block (decodeBlock): what the writer needs
 * without parsing the row.
 */
export interface WriterItemHeaders {
  /** app id */
  a: string
  /** event uuid */
  u: string
  /** transaction id */
  t: string
  /** line number in the upload */
  l: string
  /** receipt time, ms */
  r: string
  /** org id */
  o: string
  /** source: server or sdk */
  s: 'server' | 'sdk'
}

export const eventKey = (appId: string, uuid: string) => `${appId}\n${uuid}`

/**
 * Validated events as the CPU pool hands them to the splitter: columns of identity fields, plus
 * each event's `OWN_COLUMNS` already serialised as JSON values in that order
 * (`"<uuid>","<customer>","<name>",<time>,{attributes},<ltv>`), all in one buffer (`ownEnd[i]` is
 * where event i's values end; they start where i-1's end). A few columns cross the thread
 * boundary far more cheaply than one object per event, and the splitter only copies the app's
 * and the device's values around each slice: the event is serialised once, on the pool, and
 * never becomes a string on the main thread.
 */
export interface PackedEvents {
  line: number[]
  app: string[]
  customer: string[]
  uuid: string[]
  own: Uint8Array
  ownEnd: number[]
}

export const noPackedEvents = (): PackedEvents => ({
  line: [],
  app: [],
  customer: [],
  uuid: [],
  own: new Uint8Array(0),
  ownEnd: [],
})

export function packEvents(events: readonly ValidEvent[]): PackedEvents {
  const packed = noPackedEvents()
  const members: string[] = []
  let chars = 0
  for (const e of events) {
    packed.line.push(e.line)
    packed.app.push(e.app_uuid)
    packed.customer.push(e.customer_id)
    packed.uuid.push(e.uuid)
    const own = `${JSON.stringify(e.uuid)},${JSON.stringify(e.customer_id)},${JSON.stringify(e.event_name)},${e.event_time},${JSON.stringify(e.attributes)},${e.ltv_change}`
    members.push(own)
    chars += own.length
    packed.ownEnd.push(chars)
  }
  const own = Buffer.from(members.join(''))
  // Offsets were counted in characters, which are bytes when everything is ASCII (the usual case);
  // otherwise count each event's bytes.
  if (own.length !== chars) {
    let end = 0
    for (let i = 0; i < members.length; i++) packed.ownEnd[i] = end += Buffer.byteLength(members[i]!)
  }
  packed.own = own
  return packed
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
 * The columns of an `events` row as the pipeline inserts it (JSONCompactEachRow: one JSON array
 * per row, values in this order). The order groups what is known per upload, per event and per
 * device, so the splitter assembles a row from three ready pieces: the upload's head, the event's
 * own values from the CPU pool, the device's tail.
 */
export const EVENT_COLUMNS = [
  ...UPLOAD_COLUMNS,
  ...OWN_COLUMNS,
  ...DEVICE_DIMENSIONS,
] as const satisfies readonly (keyof EventRow)[]

/** One `events` row as a JSONCompactEachRow line (no newline), values in `EVENT_COLUMNS` order. */
export function compactEventRow(row: EventRow): string {
  return JSON.stringify(EVENT_COLUMNS.map((column) => row[column]))
}

/** A device's values, the end of a compact row: `,"<install_uuid>",…,"<device_timezone>"]`. */
export function deviceTail(d: DeviceDims): string {
  let tail = ''
  for (const column of DEVICE_DIMENSIONS) tail += `,${JSON.stringify(d[column])}`
  return `${tail}]`
}
