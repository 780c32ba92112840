import { systemClock, type Clock } from '../../../pipelines/clock.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import { stringSet } from '../../../pipelines/connectors/store/string-set.ts'

export interface ProfileKey {
  db: number
  customer: string
}

interface Stamp {
  key: ProfileKey
  /** The last receipt time given to the key (kept after it is applied: stamps only grow). */
  last: number
  /** The receipt time of the latest durable write not yet seen applied. */
  pending: number | undefined
}

export interface PendingWrite {
  key: ProfileKey
  receivedAt: number
}

const idOf = (k: ProfileKey) => `${k.db}:${k.customer}`

/**
 * Read-your-writes on one edge. Writes are applied after their 202, so a GET right after one could
 * miss it; instead, the edge remembers the receipt time of each write it accepted, and a read of
 * that profile waits (boundedly) for the profile's `updated_at` (the latest receipt time the writer
 * applied) to reach it.
 *
 * That comparison is exact only if, for one key, receipt times grow in the order the records land
 * on the bus. So this edge produces each key's records one at a time, stamping each with a time
 * strictly after the previous one. A customer is limited to a few writes a minute, so serialising
 * them costs nothing in practice. Writes accepted by other edges are not waited for.
 */
export class PendingWrites {
  private readonly stamps = new Map<string, Stamp>()
  private readonly chains = new Map<string, Promise<unknown>>()
  private readonly maxEntries: number
  private readonly forgetAfterMs: number
  private readonly clock: Clock

  constructor(options: { maxEntries?: number; forgetAfterMs?: number; clock?: Clock } = {}) {
    this.maxEntries = options.maxEntries ?? 100_000
    this.forgetAfterMs = options.forgetAfterMs ?? 60_000
    this.clock = options.clock ?? systemClock
  }

  /**
   * Run `produce(receivedAt)` once the key's previous produce has finished, with a receipt time
   * later than any given to the key before; remember the write once `produce` resolved (durable).
   */
  async write<T>(key: ProfileKey, produce: (receivedAt: number) => Promise<T>): Promise<T> {
    const id = idOf(key)
    const step = async () => {
      const previous = this.stamps.get(id)
      const receivedAt = Math.max(this.clock.now(), (previous?.last ?? 0) + 1)
      this.set(id, { key, last: receivedAt, pending: previous?.pending })
      const result = await produce(receivedAt)
      this.set(id, { key, last: receivedAt, pending: receivedAt })
      return result
    }
    const run = (this.chains.get(id) ?? Promise.resolve()).then(step, step)
    this.chains.set(id, run)
    try {
      return await run
    } finally {
      if (this.chains.get(id) === run) this.chains.delete(id)
    }
  }

  /** Writes this edge accepted for these keys and has not yet seen applied. */
  pendingFor(keys: readonly ProfileKey[]): PendingWrite[] {
    return keys.flatMap((key) => {
      const pending = this.stamps.get(idOf(key))?.pending
      return pending === undefined ? [] : [{ key, receivedAt: pending }]
    })
  }

  /** Pending writes in these profile dbs (for look-ups that do not name the customer). */
  pendingInDbs(dbs: readonly number[]): PendingWrite[] {
    const wanted = new Set(dbs)
    const out: PendingWrite[] = []
    for (const stamp of this.stamps.values())
      if (stamp.pending !== undefined && wanted.has(stamp.key.db))
        out.push({ key: stamp.key, receivedAt: stamp.pending })
    return out
  }

  /**
   * Wait until the writer has applied these writes, or until `timeoutMs` has passed (the read then
   * shows what is there). Returns whether all were applied.
   */
  async waitApplied(store: Store, writes: PendingWrite[], timeoutMs: number): Promise<boolean> {
    const deadline = this.clock.now() + timeoutMs
    let waiting = writes
    let interval = 5
    while (waiting.length > 0) {
      const applied = await appliedUpTo(
        store,
        waiting.map((w) => w.key),
      )
      const still: PendingWrite[] = []
      for (const write of waiting) {
        if ((applied.get(idOf(write.key)) ?? -Infinity) < write.receivedAt) {
          still.push(write)
          continue
        }
        const stamp = this.stamps.get(idOf(write.key))
        if (stamp?.pending === write.receivedAt) stamp.pending = undefined
      }
      waiting = still
      if (waiting.length === 0) break
      if (this.clock.now() + interval > deadline) return false
      await this.clock.sleep(interval)
      interval = Math.min(interval * 2, 50)
    }
    return true
  }

  private set(id: string, stamp: Stamp): void {
    // Re-inserted last, so the map stays in stamp order and the sweep below stops early.
    this.stamps.delete(id)
    this.stamps.set(id, stamp)
    const horizon = this.clock.now() - this.forgetAfterMs
    for (const [oldId, old] of this.stamps) {
      if (old.last >= horizon && this.stamps.size <= this.maxEntries) break
      this.stamps.delete(oldId)
    }
  }
}

/** The latest receipt time applied to each key (a max over versions: no FINAL needed). */
async function appliedUpTo(store: Store, keys: ProfileKey[]): Promise<Map<string, number>> {
  const customers = stringSet('customers', [...new Set(keys.map((k) => k.customer))])
  const rows = await store.query<{ profiledb_id: number | string; customer_id: string; at: number | string }>(
    `SELECT profiledb_id, customer_id, max(toUnixTimestamp64Milli(updated_at)) AS at FROM profiles
     WHERE profiledb_id IN {dbs:Array(UInt64)} AND customer_id IN ${customers.sql}
     GROUP BY profiledb_id, customer_id`,
    { dbs: [...new Set(keys.map((k) => k.db))], customers: customers.value },
  )
  return new Map(rows.map((r) => [`${Number(r.profiledb_id)}:${r.customer_id}`, Number(r.at)]))
}
