import { RowBinaryWriter } from '../events/row-binary.ts'

/**
 * push_deliveries rows as the sender writes them: RowBinary (ClickHouse's binary row format), in
 * which the engine loads a row for about half the CPU of the same row as JSONCompactEachRow
 * (measured alone: 2.9–3.0 against 4.6–5.8 µs a row into a Null table, 2,500 rows an insert).
 * Only the install and the customer differ between most rows of a run, so a row is the batch's
 * head (app … creative) and a tail (platform … version) encoded once each, around those two.
 *
 * Layout, per ClickHouse: String (and LowCardinality(String)) = unsigned LEB128 byte length +
 * UTF-8 bytes (a lone surrogate is written as U+FFFD, so every string is valid UTF-8); UIntN = N/8
 * bytes little endian; DateTime64(3) = Int64 milliseconds, little endian.
 */

const DATETIME = "DateTime64(3, 'UTC')"

/** The columns of a row, in order, with the types their bytes have. */
export const DELIVERY_ROW_BINARY = [
  ['app_id', 'String'],
  ['request_id', 'String'],
  ['generation', 'UInt32'],
  ['campaign_key', 'String'],
  ['campaign_id', 'UInt64'],
  ['creative', 'String'],
  ['install_uuid', 'String'],
  ['customer_id', 'String'],
  ['platform', 'String'],
  ['transport', 'String'],
  ['status', 'String'],
  ['error', 'String'],
  ['attempts', 'UInt16'],
  ['message_index', 'UInt32'],
  ['batch_id', 'String'],
  ['planned_at', DATETIME],
  ['first_attempt_at', DATETIME],
  ['finished_at', DATETIME],
  ['version', 'UInt64'],
] as const satisfies readonly (readonly [string, string])[]

export interface RowHead {
  appId: string
  requestId: string
  generation: number
  campaignKey: string
  campaignId: number
  creative: string
}

export interface RowTail {
  platform: string
  transport: string
  status: string
  error: string
  attempts: number
  messageIndex: number
  batchId: string
  plannedAt: number
  firstAttemptAt: number
  finishedAt: number
  version: number
}

/** A growing buffer of rows, in the RowBinary writer the events use. */
export class DeliveryRows {
  private readonly out: RowBinaryWriter

  constructor(initialBytes = 64 * 1024) {
    this.out = new RowBinaryWriter(initialBytes)
  }

  /** The bytes of the columns before the install. */
  static head(h: RowHead): Buffer {
    const out = new RowBinaryWriter(256)
    out.string(h.appId)
    out.string(h.requestId)
    out.uint(h.generation, 4)
    out.string(h.campaignKey)
    out.uint(h.campaignId, 8)
    out.string(h.creative)
    return Buffer.from(out.view())
  }

  /** The bytes of the columns after the customer. */
  static tail(t: RowTail): Buffer {
    const out = new RowBinaryWriter(256)
    out.string(t.platform)
    out.string(t.transport)
    out.string(t.status)
    out.string(t.error)
    out.uint(t.attempts, 2)
    out.uint(t.messageIndex, 4)
    out.string(t.batchId)
    out.uint(t.plannedAt, 8)
    out.uint(t.firstAttemptAt, 8)
    out.uint(t.finishedAt, 8)
    out.uint(t.version, 8)
    return Buffer.from(out.view())
  }

  row(head: Buffer, install: string, customer: string, tail: Buffer): void {
    this.out.append(head)
    this.out.string(install)
    this.out.string(customer)
    this.out.append(tail)
  }

  /** The rows written (a view, valid until the next write). */
  bytes(): Buffer {
    return this.out.view()
  }
}
