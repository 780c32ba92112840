import type { RowParts } from './event-block.ts'
import type { WriterItemHeaders } from './event-row.ts'
import { eventKey } from './event-row.ts'

export interface WriterItem {
  headers: WriterItemHeaders
  /** The event's RowBinary row, whole or in parts (head, a slice of the pool's buffer, tail). */
  value: Buffer | RowParts
  /**
   * Where the CPU pool hashed the key for the filter of stored keys: h1 at `keyHash[2 * keyIndex]`,
   * h2 after it (PackedEvents.keyHash). Without it the key is hashed when screened.
   */
  keyHash?: Uint32Array
  keyIndex?: number
}

export type WriterDecision =
  | { kind: 'store'; item: WriterItem }
  | { kind: 'replay'; item: WriterItem }
  | { kind: 'duplicate'; item: WriterItem; firstTransaction: string }

/**
 * The exactly-once rule, as a pure function over one partition's batch in offset order: the first
 * copy of an (app, uuid) is stored; a later copy from the same transaction and line is a replay of
 * work already done (skipped silently); a copy from another upload, or another line, is a
 * duplicate (recorded as a rejected line). `alreadyStored` maps keys to the transaction that
 * stored them.
 */
export function classifyBatch(
  items: readonly WriterItem[],
  alreadyStored: ReadonlyMap<string, { tx: string; line?: string }>,
) {
  const seen = new Map<string, { tx: string; line?: string }>(alreadyStored)
  const decisions: WriterDecision[] = []
  for (const item of items) {
    const key = eventKey(item.headers.a, item.headers.u)
    const first = seen.get(key)
    if (!first) {
      seen.set(key, { tx: item.headers.t, line: item.headers.l })
      decisions.push({ kind: 'store', item })
    } else if (first.tx === item.headers.t && (first.line === undefined || first.line === item.headers.l)) {
      decisions.push({ kind: 'replay', item })
    } else {
      decisions.push({ kind: 'duplicate', item, firstTransaction: first.tx })
    }
  }
  return decisions
}
