import type { Bus } from '../../../pipelines/connectors/bus/bus.ts'

export interface ShedderOptions {
  bus: Bus
  /** (group, topic) pairs whose lag means "the workers or the store are behind". */
  watched: { group: string; topic: string }[]
  maxLag: number
  /**
   * A backlog whose oldest record has waited longer than this (ms) sheds load too, where the bus
   * can tell (the local log): time to catch up, whatever the records hold (a gzip body holds 30
   * times the events of a plain one). 0: records only.
   */
  maxBacklogMs?: number
  /** Upload bytes held at once (SLUICE_UPLOAD_MAX_IN_FLIGHT_BYTES): past it, new uploads are refused. */
  maxInFlightBytes: number
  sampleEveryMs?: number
  onSample?: (topic: string, lag: number) => void
}

/**
 * Decides when the edge must shed load (503 + Retry-After) instead of buffering: when the bus
 * backlog of a watched pipeline passes `maxLag` records or its oldest record has waited longer
 * than `maxBacklogMs`, or when upload bodies held (being read, checked or stored) pass `maxInFlightBytes`. Lag
 * is sampled in the background, never on the request path.
 */
export class LoadShedder {
  private readonly options: ShedderOptions
  private lagging: string | undefined
  private inFlightBytes = 0
  private timer: NodeJS.Timeout | undefined

  constructor(options: ShedderOptions) {
    this.options = options
  }

  start(): void {
    const tick = () => {
      void this.sample().finally(() => {
        if (this.timer) this.timer = setTimeout(tick, this.options.sampleEveryMs ?? 500)
      })
    }
    this.timer = setTimeout(tick, 0)
  }

  stop(): void {
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
  }

  /** The reason to refuse a request of `bytes` now, or undefined to accept it. */
  refusal(bytes: number): string | undefined {
    if (this.lagging) return `ingestion is behind (${this.lagging}); retry later`
    if (this.inFlightBytes + bytes > this.options.maxInFlightBytes)
      return 'too many uploads in flight; retry later'
    return undefined
  }

  /**
   * Counts `bytes` as in flight (an upload: from before its body is read until it is durable),
   * until release(bytes). A pair in the caller's try/finally rather than a callback taking the work:
   * on the upload path that callback was one more async frame per request.
   */
  hold(bytes: number): void {
    this.inFlightBytes += bytes
  }

  release(bytes: number): void {
    this.inFlightBytes -= bytes
  }

  async sample(): Promise<void> {
    let lagging: string | undefined
    const { bus, maxBacklogMs = 0 } = this.options
    for (const { group, topic } of this.options.watched) {
      const lag = await bus.lag(group, topic).catch(() => 0)
      this.options.onSample?.(topic, lag)
      if (lag > this.options.maxLag) lagging = `${topic} backlog ${lag}`
      else if (lag > 0 && maxBacklogMs > 0 && bus.backlogAgeMs) {
        const age = await bus.backlogAgeMs(group, topic).catch(() => 0)
        if (age > maxBacklogMs) lagging = `${topic} backlog ${(age / 1000).toFixed(1)} s old`
      }
    }
    this.lagging = lagging
  }
}
