import type { Store } from '../connectors/store/store.ts'
import { stampRecorded, type ReceiptRow, type RejectRow } from './upload-outcomes.ts'

/**
 * Records write groups' rejected lines and receipts (`rejected_lines`, then `upload_receipts`),
 * each group as soon as it asks, on the engine's connection for small inserts (`beside`): not
 * behind the next group's events insert, which runs meanwhile. A group that asks while an earlier
 * group's record is being inserted is recorded with every other group that asked meanwhile, in
 * one insert per table: each insert costs the engine ~5-10 ms of CPU whatever its size, so under
 * load one insert serves several groups, and when idle each group still gets its own at once.
 *
 * A group asks only once its events are queryable, so a receipt never claims events a reader
 * cannot see; its rejected lines are inserted before its receipt, so a reader that finds the
 * receipt finds them. A group's promise settles when its own rows are inserted (or the insert
 * failed: the caller's batch then fails and its replay records the same rows again, which the
 * tables' ReplacingMergeTree keys absorb).
 */
export interface OutcomeRecorder {
  record(rejects: readonly RejectRow[], receipts: readonly ReceiptRow[]): Promise<void>
}

interface Pending {
  rejects: RejectRow[]
  receipts: ReceiptRow[]
  done: Promise<void>
  settle: (err?: Error) => void
}

export function outcomeRecorder(store: Store): OutcomeRecorder {
  let pending: Pending | undefined
  let inserting = false

  const open = (): Pending => {
    let settle!: (err?: Error) => void
    const done = new Promise<void>((resolve, reject) => {
      settle = (err) => (err === undefined ? resolve() : reject(err))
    })
    return { rejects: [], receipts: [], done, settle }
  }

  const insert = async (next: Pending): Promise<void> => {
    inserting = true
    try {
      if (next.rejects.length > 0) await store.insert('rejected_lines', next.rejects, { beside: true })
      if (next.receipts.length > 0)
        await store.insert('upload_receipts', stampRecorded(next.receipts, Date.now()), { beside: true })
      next.settle()
    } catch (err) {
      next.settle(err instanceof Error ? err : new Error(String(err)))
    } finally {
      inserting = false
    }
    const waiting = pending
    pending = undefined
    if (waiting) void insert(waiting)
  }

  return {
    record(rejects, receipts) {
      if (rejects.length === 0 && receipts.length === 0) return Promise.resolve()
      const into = pending ?? (pending = open())
      // No spread: an argument list has a size limit, a group's rejects do not.
      for (const r of rejects) into.rejects.push(r)
      for (const r of receipts) into.receipts.push(r)
      if (!inserting) {
        pending = undefined
        void insert(into)
      }
      return into.done
    },
  }
}
