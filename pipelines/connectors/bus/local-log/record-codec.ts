/**
 * The stored form of one record: a small binary header (timestamp, key, headers) followed by the
 * payload bytes, so payloads are stored and read without re-encoding.
 */
import type { BusRecord, ProduceMessage } from '../bus.ts'
import { takeHeadroom } from '../headroom.ts'

// Record value layout: u8 format, f64 timestamp, u32 key length (NULL_KEY = no key), key,
// u32 headers length, headers as JSON, payload. Little endian.
const FORMAT = 1
const NULL_KEY = 0xffffffff
const TIMESTAMP_AT = 1

/**
 * Encodes records into one buffer it reuses: each record is a view valid until the next encode,
 * for a write that copies it at once (lmdb's put inside a write transaction). A fresh buffer per
 * record was a second copy of every upload body held until the commit (74 KB per plain upload),
 * outside V8's heap, where each such allocation also hastens the next garbage collection.
 */
export class RecordEncoder {
  private scratch = Buffer.allocUnsafe(256 * 1024)

  encode(message: ProduceMessage, timestamp: number): Buffer {
    const layout = measure(message)
    if (layout.size > this.scratch.length)
      this.scratch = Buffer.allocUnsafe(Math.max(layout.size, this.scratch.length * 2))
    return write(this.scratch, message, timestamp, layout)
  }
}

/**
 * A record in a buffer of its own, for an asynchronous write, which holds it until lmdb's write
 * thread copies it into the database.
 */
export function encodeRecord(message: ProduceMessage, timestamp: number): Buffer {
  const layout = measure(message)
  const inPlace = takeHeadroom(message.value, layout.size - message.value.length)
  if (inPlace !== undefined) {
    // The payload is already where the record wants it: only the header is written.
    writeHeader(inPlace, message, timestamp, layout)
    return inPlace
  }
  return write(Buffer.allocUnsafe(layout.size), message, timestamp, layout)
}

interface Layout {
  keyLength: number
  headers: string | undefined
  headersLength: number
  size: number
}

function measure(message: ProduceMessage): Layout {
  const keyLength = message.key === undefined ? 0 : Buffer.byteLength(message.key)
  const headers = hasHeaders(message.headers) ? JSON.stringify(message.headers) : undefined
  const headersLength = headers === undefined ? 0 : Buffer.byteLength(headers)
  const size = 1 + 8 + 4 + keyLength + 4 + headersLength + message.value.length
  return { keyLength, headers, headersLength, size }
}

function write(out: Buffer, message: ProduceMessage, timestamp: number, layout: Layout): Buffer {
  out.set(message.value, writeHeader(out, message, timestamp, layout))
  return out.subarray(0, layout.size)
}

/** Writes the header at the start of `out`; returns where the payload starts. */
function writeHeader(out: Buffer, message: ProduceMessage, timestamp: number, layout: Layout): number {
  const { key } = message
  let at = out.writeUInt8(FORMAT, 0)
  at = out.writeDoubleLE(timestamp, at)
  at = out.writeUInt32LE(key === undefined ? NULL_KEY : layout.keyLength, at)
  if (key !== undefined) at += out.write(key, at, 'utf8')
  at = out.writeUInt32LE(layout.headersLength, at)
  if (layout.headers !== undefined) at += out.write(layout.headers, at, 'utf8')
  return at
}

export function decodeRecord(topic: string, partition: number, offset: number, data: Buffer): BusRecord {
  if (data[0] !== FORMAT)
    throw new Error(`unknown record format ${data[0]} at ${topic}/${partition}/${offset}`)
  const timestamp = recordTimestamp(data)
  let at = 9
  const keyLength = data.readUInt32LE(at)
  at += 4
  const key = keyLength === NULL_KEY ? null : data.toString('utf8', at, (at += keyLength))
  const headersLength = data.readUInt32LE(at)
  at += 4
  const headers = headersLength === 0 ? {} : parseHeaders(data.toString('utf8', at, (at += headersLength)))
  // getRange hands out a private copy per record, so a view into it is safe to keep.
  return { topic, partition, offset: String(offset), key, value: data.subarray(at), headers, timestamp }
}

/** The produce time alone, read from the header without touching the rest. */
export function recordTimestamp(data: Buffer): number {
  return data.readDoubleLE(TIMESTAMP_AT)
}

function hasHeaders(headers: Record<string, string> | undefined): headers is Record<string, string> {
  return headers !== undefined && Object.keys(headers).length > 0
}

function parseHeaders(json: string): Record<string, string> {
  return JSON.parse(json) as Record<string, string>
}
