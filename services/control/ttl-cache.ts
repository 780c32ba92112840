import { LRUCache } from 'lru-cache'
import type { Clock } from '../../pipelines/clock.ts'

export interface TtlCacheOptions {
  /** Most entries kept; past it the least recently used goes. Bounds memory whatever keys arrive. */
  max?: number
  /** For tests; the default is the monotonic `performance.now()`. */
  clock?: Pick<Clock, 'now'>
  /**
   * How long past its TTL an answer is still served when loading it afresh fails (the store is
   * down): an edge keeps accepting the keys and apps it knew instead of failing every request of
   * an outage. 0 (default): never. delete() drops it like the fresh entry.
   */
  staleIfErrorMs?: number
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
  /** The last answer loaded of each key, kept TTL + staleIfErrorMs: what an outage is answered with. */
  private readonly lastKnown: LRUCache<string, Box<V>> | undefined

  constructor(ttlMs: number, options: TtlCacheOptions = {}) {
    if (ttlMs <= 0) return
    const lastKnown =
      options.staleIfErrorMs && options.staleIfErrorMs > 0
        ? new LRUCache<string, Box<V>>({
            max: options.max ?? 10_000,
            ttl: ttlMs + options.staleIfErrorMs,
            ttlResolution: 0,
            perf: options.clock,
          })
        : undefined
    this.lastKnown = lastKnown
    this.cache = new LRUCache<string, Box<V>, Loader<V>>({
      max: options.max ?? 10_000,
      ttl: ttlMs,
      // Read the clock at every check: lru-cache's default keeps a reading for 1 ms with a timer.
      ttlResolution: 0,
      perf: options.clock,
      fetchMethod: async (key, _stale, { context: load }) => {
        const box = { value: await load() }
        lastKnown?.set(key, box)
        return box
      },
      // A delete (key created or revoked) while a load runs aborts it: callers already waiting
      // still get its answer, but the answer is not kept, so the delete is never undone.
      ignoreFetchAbort: true,
    })
  }

  async get(key: string, load: Loader<V>): Promise<V> {
    if (!this.cache) return load()
    try {
      const box = this.cache.get(key) ?? (await this.cache.fetch(key, { context: load }))
      // The fetch method always answers a box; undefined would mean lru-cache dropped it.
      return box === undefined ? await load() : box.value
    } catch (err) {
      const known = this.lastKnown?.get(key)
      if (known) return known.value
      throw err
    }
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
    this.lastKnown?.delete(key)
  }

  /** Entries held now (for tests of the bound). */
  get size(): number {
    return this.cache?.size ?? 0
  }
}
