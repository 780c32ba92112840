import { LRUCache } from 'lru-cache'
import { customerKey } from './device-lookup.ts'
import type { DeviceDims } from './event-row.ts'

/**
 * Customers' last active devices as `customer_devices` holds them, remembered between the
 * splitter's groups: every group of a batch names most of the same customers, and the look-up
 * asked the engine for all of them again (bench e2e-gzip: 23 look-ups of ~2,000 customers,
 * 17–86 ms each, ~0.8 s of a 7 s scenario).
 *
 * Only where this process is the only writer of `customer_devices` (the embedded engine: the SDK
 * builder that writes it runs here). The builder tells the cache which customers it is about to
 * write and has written (`forget`), so an entry never outlives the row it was read from:
 * - an entry is dropped when its customer's row is written (before the insert and after it);
 * - a look-up's answer is kept only if no write started or ended while it ran (`generation`),
 *   since it may have read the row from before or after that write.
 * Customers without a device are never remembered: they are asked again (and waited for) as before.
 */
export class DeviceCache {
  private readonly entries: LRUCache<string, DeviceDims>
  private writes = 0

  constructor(maxCustomers = DEFAULT_MAX_CUSTOMERS) {
    this.entries = new LRUCache({ max: maxCustomers })
  }

  /** Changes whenever a write of `customer_devices` starts or ends. */
  get generation(): number {
    return this.writes
  }

  get(app: string, customer: string): DeviceDims | undefined {
    return this.entries.get(customerKey(app, customer))
  }

  /** Keeps what a look-up found, unless a write started or ended since it began (at `since`). */
  remember(found: Iterable<[{ app: string; customer: string }, DeviceDims]>, since: number): void {
    if (since !== this.writes) return
    for (const [{ app, customer }, device] of found) this.entries.set(customerKey(app, customer), device)
  }

  /** The SDK builder writes (or wrote) these customers' rows. */
  forget(rows: Iterable<{ app_id: string; customer_id: string }>): void {
    this.writes++
    for (const row of rows) this.entries.delete(customerKey(row.app_id, row.customer_id))
  }

  get size(): number {
    return this.entries.size
  }
}

// ~0.5 KB a device (a dozen short strings): 20,000 customers are ~10 MB at most.
const DEFAULT_MAX_CUSTOMERS = 20_000
