/** A small TTL cache for look-ups every request makes (keys, apps); entries expire, never grow stale. */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; expires: number }>()
  private readonly ttlMs: number
  private readonly maxEntries: number

  constructor(ttlMs: number, maxEntries = 100_000) {
    this.ttlMs = ttlMs
    this.maxEntries = maxEntries
  }

  async get(key: string, load: () => Promise<V>): Promise<V> {
    const now = Date.now()
    const hit = this.entries.get(key)
    if (hit && hit.expires > now) return hit.value
    const value = await load()
    if (this.ttlMs > 0) {
      if (this.entries.size >= this.maxEntries) this.evictExpired(now)
      if (this.entries.size >= this.maxEntries) this.entries.clear()
      this.entries.set(key, { value, expires: now + this.ttlMs })
    }
    return value
  }

  delete(key: string): void {
    this.entries.delete(key)
  }

  private evictExpired(now: number): void {
    for (const [key, entry] of this.entries) if (entry.expires <= now) this.entries.delete(key)
  }
}
