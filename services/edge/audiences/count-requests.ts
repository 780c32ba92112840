import { systemClock, type Clock } from '../../../pipelines/clock.ts'
import type { Bus } from '../../../pipelines/connectors/bus/bus.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import { readCounts, type AudienceCounts } from '../../../pipelines/audiences/audience-reader.ts'
import { encodeCountRequest, type CountRequest } from '../../../pipelines/audiences/count-requests.ts'

const FIRST_POLL_MS = 10
const MAX_POLL_MS = 100

export interface CountRequesterDeps {
  bus: Bus
  store: Store
  /** The audience-counts topic. */
  topic: string
  /** How long a request waits for its counts (SLUICE_AUDIENCE_COUNT_WAIT_MS). */
  waitMs: number
  clock?: Clock
}

/**
 * The edge's way to have an audience counted: a request on the audience-counts topic, then a
 * bounded wait for the counts row that answers it (the audience counter writes one per
 * computation, carrying the latest request time it served and the audience version it read).
 */
export class CountRequester {
  private readonly clock: Clock

  constructor(private readonly deps: CountRequesterDeps) {
    this.clock = deps.clock ?? systemClock
  }

  /** Puts the request on the bus (durable when it resolves). */
  async request(request: Omit<CountRequest, 'v' | 'requested_at'>): Promise<number> {
    const requestedAt = this.clock.now()
    await this.deps.bus.produce(this.deps.topic, [
      encodeCountRequest({ v: 1, ...request, requested_at: requestedAt }),
    ])
    return requestedAt
  }

  /**
   * The counts computed after `requestedAt` from the audience at `version` or later, or undefined
   * when none came within the wait.
   */
  async waitFor(audienceId: number, requestedAt: number, version = 0): Promise<AudienceCounts | undefined> {
    const deadline = this.clock.now() + this.deps.waitMs
    let interval = FIRST_POLL_MS
    for (;;) {
      const counts = (await readCounts(this.deps.store, [audienceId])).get(audienceId)
      if (counts && counts.requested_at >= requestedAt && counts.audience_version >= version) return counts
      const left = deadline - this.clock.now()
      if (left <= 0) return undefined
      await this.clock.sleep(Math.min(interval, left))
      interval = Math.min(interval * 2, MAX_POLL_MS)
    }
  }
}
