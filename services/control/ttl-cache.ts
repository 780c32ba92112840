import { LRUCache } from 'lru-cache'
import type { Clock } from '../../pipelines/clock.ts'

export interface TtlCacheOptions {
  /** Most entries kept; past it the least recently used goes. Bounds memory whatever keys arrive. */
  max?: number
  /** For tests; the default is the monotonic `performance.now()`. */
  clock?: Pick<Clock, 'now'>
}

/** Boxed, so that "not found" (undefined) is cached like any answer. */
interface Box<V> {
  value: V
}

type Loader<V> = () => Promise<V>

/**
 * A bounded LRU cache with a TTL for look-ups every request makes (keys, apps): an entry is served
 * for at most `ttlMs`, and concurrent misses of one key share a single load. "Not found" is cached
 * too (a deleted app's SDKs keep uploading), but it takes an LRU slot like any entry, so keys
 * nobody has are evicted first and never grow the cache. A TTL of 0 caches nothing.
 */
export class TtlCache<V> {
  private readonly cache: LRUCache<string, Box<V>, Loader<V>> | undefined

  constructor(ttlMs: number, options: TtlCacheOptions = {}) {
    if (ttlMs <= 0) return
    this.cache = new LRUCache<string, Box<V>, Loader<V>>({
      max: options.max ?? 10_000,
      ttl: ttlMs,
      // Read the clock at every check: lru-cache's default keeps a reading for 1 ms with a timer.
      ttlResolution: 0,
      perf: options.clock,
      fetchMethod: async (_key, _stale, { context: load }) => ({ value: await load() }),
      // A delete (key created or revoked) while a load runs aborts it: callers already waiting
      // still get its answer, but the answer is not kept, so the delete is never undone.
      ignoreFetchAbort: true,
    })
  }

  async get(key: string, load: Loader<V>): Promise<V> {
    if (!this.cache) return load()
    const box = this.cache.get(key) ?? (await this.cache.fetch(key, { context: load }))
    // The fetch method always answers a box; undefined would mean lru-cache dropped it.
    return box === undefined ? load() : box.value
  }

  /**
   * The cached answer for `key` while it is fresh, without waiting: for look-ups on every request
   * (an upload's API key), where an await per hit cost the event loop a promise and a turn of
   * lru-cache's fetch. Undefined on a miss, an expired entry or a load still running: then get().
   */
  peek(key: string): { value: V } | undefined {
    return this.cache?.get(key)
  }

  delete(key: string): void {
    this.cache?.delete(key)
  }

  /** Entries held now (for tests of the bound). */
  get size(): number {
    return this.cache?.size ?? 0
  }
}
