import { LRUCache } from 'lru-cache'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import { campaignKeysOf } from '../../../pipelines/push/request-log.ts'

export type Admission = { ok: true; release: () => void } | { ok: false; retryAfterSeconds: number }

/**
 * The spec's cap on new campaign keys: at most `limit` keys an app used for the first time within
 * the last `windowMs` (24 h). A key is new if no request of the app ever carried it; the store's
 * record (push_requests) is joined with the keys this edge accepted and the planner has not
 * recorded yet. A key over the cap is refused until the oldest new key of the window ages out.
 *
 * Several edges each count their own not-yet-recorded keys: new keys accepted by two edges in the
 * same instant can pass the cap by one per edge (documented in docs/push.md).
 */
export class CampaignKeyCap {
  /** Keys this edge accepted first within the window, per app, with when. */
  private readonly recent = new Map<string, Map<string, number>>()
  /** Keys known to be old (first used before the window): never new again, never asked again. */
  private readonly old = new LRUCache<string, true>({ max: 100_000 })

  constructor(
    private readonly store: Store,
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  async admit(appId: string, key: string, now: number): Promise<Admission> {
    const since = now - this.windowMs
    const recent = this.recentOf(appId, since)
    if (recent.has(key) || this.old.has(`${appId}\n${key}`)) return { ok: true, release: () => {} }
    const stored = await campaignKeysOf(this.store, appId, key, since)
    // Re-read after the await: another request of this app may have reserved keys meanwhile.
    const mine = this.recentOf(appId, since)
    const first = stored.get(key) ?? mine.get(key)
    if (first !== undefined) {
      if (first < since) this.old.set(`${appId}\n${key}`, true)
      else mine.set(key, first)
      return { ok: true, release: () => {} }
    }
    const window = new Map(stored)
    for (const [k, at] of mine) if (!window.has(k)) window.set(k, at)
    const firsts = [...window.values()].filter((at) => at >= since).sort((a, b) => a - b)
    if (firsts.length >= this.limit) {
      // The window admits a new key once enough of its keys have aged out.
      const freeAt = firsts[firsts.length - this.limit]! + this.windowMs
      return { ok: false, retryAfterSeconds: Math.max(1, (freeAt - now) / 1000) }
    }
    mine.set(key, now)
    return { ok: true, release: () => void (mine.get(key) === now && mine.delete(key)) }
  }

  private recentOf(appId: string, since: number): Map<string, number> {
    let keys = this.recent.get(appId)
    if (!keys) {
      keys = new Map()
      this.recent.set(appId, keys)
    }
    for (const [k, at] of keys) if (at < since) keys.delete(k)
    return keys
  }
}
