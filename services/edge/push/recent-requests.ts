import { LRUCache } from 'lru-cache'

/**
 * Request ids this edge accepted within the de-duplication window, so a client's retry is answered
 * 202 at once, without taking a rate-limit token or producing a second record. The planner's
 * push_requests record is what de-duplicates for sure (a retry to another edge, or after a
 * restart, is dropped there); this only spares the retry a 429.
 */
export class RecentRequests {
  private readonly accepted: LRUCache<string, number>

  constructor(
    private readonly windowMs: number,
    max = 100_000,
  ) {
    this.accepted = new LRUCache({ max })
  }

  seen(appId: string, requestId: string, now: number): boolean {
    const at = this.accepted.get(`${appId}\n${requestId}`)
    return at !== undefined && now - at < this.windowMs
  }

  remember(appId: string, requestId: string, at: number): void {
    const key = `${appId}\n${requestId}`
    // The window runs from the first acceptance, as the planner counts it.
    if (!this.seen(appId, requestId, at)) this.accepted.set(key, at)
  }
}
