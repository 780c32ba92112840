import type { RowParts, UploadRef } from './event-block.ts'
import { eventKey } from './event-row.ts'

/**
 * One event for the event store: its key, where it came from and its row. One object per event,
 * the upload's part shared by the upload's events: a batch's items live until its insert ends
 * (a second or so), long enough for V8 to move them to the old generation, so every object per
 * event is garbage the main thread's full collections mark and sweep.
 */
export interface WriterItem {
  app: string
  uuid: string
  /** The upload the event came in (transaction, receipt time, org, source). */
  upload: UploadRef
  /** Its line in that upload. */
  line: number
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
  alreadyStored: ReadonlyMap<string, { tx: string; line?: number }>,
) {
  const seen = new Map<string, { tx: string; line?: number }>(alreadyStored)
  const decisions: WriterDecision[] = []
  for (const item of items) {
    const key = eventKey(item.app, item.uuid)
    const first = seen.get(key)
    if (!first) {
      seen.set(key, { tx: item.upload.tx, line: item.line })
      decisions.push({ kind: 'store', item })
    } else if (first.tx === item.upload.tx && (first.line === undefined || first.line === item.line)) {
      decisions.push({ kind: 'replay', item })
    } else {
      decisions.push({ kind: 'duplicate', item, firstTransaction: first.tx })
    }
  }
  return decisions
}
