/** kafkajs messages as the Bus port's records, cut into handler batches within the consume limits. */
import type { IHeaders, KafkaMessage } from 'kafkajs'
import type { BusRecord } from '../bus.ts'

/** Consecutive chunks of at most maxRecords and maxBytes of values each (but at least one message). */
export function splitMessages(
  messages: KafkaMessage[],
  maxRecords: number,
  maxBytes: number,
): KafkaMessage[][] {
  const chunks: KafkaMessage[][] = []
  let current: KafkaMessage[] = []
  let bytes = 0
  for (const m of messages) {
    const size = m.value?.length ?? 0
    if (current.length > 0 && (current.length >= maxRecords || bytes + size > maxBytes)) {
      chunks.push(current)
      current = []
      bytes = 0
    }
    current.push(m)
    bytes += size
  }
  if (current.length > 0) chunks.push(current)
  return chunks
}

export function toRecord(topic: string, partition: number, m: KafkaMessage): BusRecord {
  return {
    topic,
    partition,
    offset: m.offset,
    key: m.key == null ? null : m.key.toString('utf8'),
    value: m.value ?? Buffer.alloc(0),
    headers: headersToStrings(m.headers),
    timestamp: Number(m.timestamp),
  }
}

export function maxOffset(a: string, b: string): string {
  return BigInt(a) > BigInt(b) ? a : b
}

function headersToStrings(headers: IHeaders | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  if (headers === undefined) return out
  for (const [name, value] of Object.entries(headers)) {
    // kafkajs folds repeated header names into an array; the port has one value per name, the last.
    const v = Array.isArray(value) ? value[value.length - 1] : value
    if (v !== undefined) out[name] = typeof v === 'string' ? v : v.toString('utf8')
  }
  return out
}
