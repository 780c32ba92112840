import type { WriterItem } from './writer-item.ts'
import { eventKey } from './event-row.ts'

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
