import type { Bus, ProduceMessage } from '../connectors/bus/bus.ts'
import { partitionForKey } from '../connectors/bus/bus.ts'
import type { RowParts, UploadRef, WriterItem } from './writer-item.ts'
import { eventKey, eventRowFromCompact, rowBinaryEventRow, type EventRow } from './event-row.ts'

/** An event on its way to the writer: its identity, where it came from, and its row. */
export interface BlockEvent {
  app: string
  uuid: string
  line: number
  upload: UploadRef
  /** The `events` row, serialised once: RowBinary of `EVENT_COLUMNS`, whole or in parts. */
  row: Buffer | RowParts
}

interface BlockHeader {
  /**
   * Row format: 2 = RowBinary rows of `EVENT_COLUMNS`, back to back, each as long as its entry in
   * `k` says. Older blocks (still on the topic at an upgrade) are read too and their rows
   * converted: 1 = JSONCompactEachRow arrays of `EVENT_COLUMNS`, one per line; absent = JSONEachRow
   * objects, one per line.
   */
  f?: 1 | 2
  /** uploads: [tx, recv, org, source] */
  u: [string, number, number, 'server' | 'sdk'][]
  /** events, in row order: [app, uuid, line, upload index, row bytes (format 2)] */
  k: [string, string, number, number, number?][]
}

/** Bounds one record (about 0.7 MB of RowBinary rows), so a writer batch is a known number of events. */
export const MAX_EVENTS_PER_BLOCK = 5000

/**
 * Events travel to the writer in blocks, one bus record per events-topic partition per batch:
 * every event in a block belongs to that partition's owner (by app + uuid, as if keyed), and the
 * rows are already the RowBinary the writer hands the engine, so nothing is parsed or serialised
 * again.
 * Layout: one JSON header line (uploads, then [app, uuid, line, upload, row bytes] per row), then
 * the rows.
 */
export function blockMessages(
  events: readonly BlockEvent[],
  partitions: number,
  maxEventsPerBlock = MAX_EVENTS_PER_BLOCK,
): ProduceMessage[] {
  const byPartition = new Map<number, BlockEvent[]>()
  for (const event of events) {
    const partition = partitionForKey(eventKey(event.app, event.uuid), partitions, 0)
    const list = byPartition.get(partition)
    if (list) list.push(event)
    else byPartition.set(partition, [event])
  }
  const messages: ProduceMessage[] = []
  for (const [partition, list] of byPartition) {
    for (let i = 0; i < list.length; i += maxEventsPerBlock) {
      messages.push({ partition, value: encodeBlock(list.slice(i, i + maxEventsPerBlock)) })
    }
  }
  return messages
}

export function encodeBlock(events: readonly BlockEvent[]): Buffer {
  const uploads = new Map<UploadRef, number>()
  const header: BlockHeader = { f: 2, u: [], k: [] }
  let rowBytes = 0
  for (const event of events) {
    let index = uploads.get(event.upload)
    if (index === undefined) {
      index = header.u.length
      uploads.set(event.upload, index)
      header.u.push([event.upload.tx, event.upload.recv, event.upload.org, event.upload.source])
    }
    const bytes = rowLength(event.row)
    header.k.push([event.app, event.uuid, event.line, index, bytes])
    rowBytes += bytes
  }
  const head = Buffer.from(`${JSON.stringify(header)}\n`)
  // One allocation and one copy of every row: a gzip body's block is megabytes.
  const out = Buffer.allocUnsafe(head.length + rowBytes)
  let at = head.copy(out, 0)
  for (const { row } of events) at = copyRow(row, out, at)
  return out
}

const OWN_BYTES_COPIED_BY_HAND = 512

/** Copies a row, whole or in parts, into `out` at `at`; returns the position after it. */
export function copyRow(row: Buffer | RowParts, out: Buffer, at: number): number {
  if (Buffer.isBuffer(row)) return at + row.copy(out, at)
  at += row.head.copy(out, at)
  const { source, start, end } = row
  const n = end - start
  // An event's own values (~130 bytes) byte by byte: Buffer#copy of part of a buffer makes a view
  // of that part per call (~60 MB of garbage on this thread over the bench's e2e-gzip).
  if (n <= OWN_BYTES_COPIED_BY_HAND) for (let i = 0; i < n; i++) out[at + i] = source[start + i]!
  else source.copy(out, at, start, end)
  at += n
  return at + row.tail.copy(out, at)
}

/** A row's length in bytes, whole or in parts. */
export function rowLength(row: Buffer | RowParts): number {
  return Buffer.isBuffer(row) ? row.length : row.head.length + (row.end - row.start) + row.tail.length
}

/** The writer's items of one block record; each item's value is its RowBinary row (a slice, not a copy). */
export function decodeBlock(value: Buffer): (WriterItem & { value: Buffer })[] {
  const headerEnd = value.indexOf(0x0a)
  if (headerEnd < 0) throw new Error('event block without a header line')
  const header = JSON.parse(value.subarray(0, headerEnd).toString('utf8')) as BlockHeader
  const items: (WriterItem & { value: Buffer })[] = []
  const uploads = header.u.map(([tx, recv, org, source]): UploadRef => ({ tx, recv, org, source }))
  let start = headerEnd + 1
  for (const [app, uuid, line, uploadIndex, bytes] of header.k) {
    const upload = uploads[uploadIndex]
    let row: Buffer
    if (header.f === 2) {
      const end = start + (bytes ?? -1)
      if (bytes === undefined || end > value.length || !upload)
        throw new Error('event block rows do not match its header')
      row = value.subarray(start, end)
      start = end
    } else {
      const end = value.indexOf(0x0a, start)
      if (end < 0 || !upload) throw new Error('event block rows do not match its header')
      row = olderRow(value.subarray(start, end), header.f)
      start = end + 1
    }
    items.push({ app, uuid, upload, line, value: row })
  }
  if (header.f === 2 && start !== value.length) throw new Error('event block rows do not match its header')
  return items
}

/** A row of a block written before RowBinary, converted. */
function olderRow(row: Buffer, format: 1 | undefined): Buffer {
  const parsed: unknown = JSON.parse(row.toString('utf8'))
  const event = format === 1 ? eventRowFromCompact(parsed as unknown[]) : (parsed as EventRow)
  return rowBinaryEventRow(event)
}

/** The events topic's partition count, asked once: blocks are routed by it. */
export function eventPartitions(bus: Bus, topic: string): () => Promise<number> {
  let known: Promise<number> | undefined
  return () => {
    if (!known) {
      known = bus.partitionCount(topic).then((n) => {
        if (n < 1) throw new Error(`topic ${topic} has no partitions yet`)
        return n
      })
      // A failed look-up is asked again next time.
      known.catch(() => (known = undefined))
    }
    return known
  }
}
