/**
 * Sends to one topic that arrive while enough are in flight wait and go together, as one produce
 * request. Every upload is its own send at the edge: alone, each costs a produce round trip (with
 * acks=-1, every in-sync replica's), and each lands in a record batch of its own, which a consumer
 * of librdkafka's mock cluster is then handed one at a time (the mock answers a fetch with one
 * record batch per partition), so every stage paid its store round trips and commit per upload.
 * Nothing waits for company: a send goes at once while fewer than `maxInFlight` are under way.
 */
export interface CoalescingOptions<M> {
  /** Requests in flight per topic before sends start to wait and coalesce. */
  maxInFlight: number
  /** Bytes of values one coalesced request carries at most (a waiting group is closed past it). */
  maxBytes: number
  size: (message: M) => number
}

interface Group<M> {
  messages: M[]
  bytes: number
  done: Promise<void>
  resolve: () => void
  reject: (err: unknown) => void
}

export class CoalescingSender<M> {
  private readonly inFlight = new Map<string, number>()
  private readonly waiting = new Map<string, Group<M>[]>()

  constructor(
    private readonly sendNow: (topic: string, messages: M[]) => Promise<void>,
    private readonly options: CoalescingOptions<M>,
  ) {}

  send(topic: string, messages: M[]): Promise<void> {
    if (messages.length === 0) return Promise.resolve()
    if ((this.inFlight.get(topic) ?? 0) < this.options.maxInFlight) return this.start(topic, messages)
    const bytes = messages.reduce((sum, m) => sum + this.options.size(m), 0)
    const groups = this.waiting.get(topic) ?? []
    this.waiting.set(topic, groups)
    let group = groups[groups.length - 1]
    if (!group || (group.bytes > 0 && group.bytes + bytes > this.options.maxBytes)) {
      let resolve!: () => void
      let reject!: (err: unknown) => void
      const done = new Promise<void>((res, rej) => {
        resolve = res
        reject = rej
      })
      group = { messages: [], bytes: 0, done, resolve, reject }
      groups.push(group)
    }
    group.messages.push(...messages)
    group.bytes += bytes
    return group.done
  }

  private start(topic: string, messages: M[]): Promise<void> {
    this.inFlight.set(topic, (this.inFlight.get(topic) ?? 0) + 1)
    return this.sendNow(topic, messages).finally(() => {
      this.inFlight.set(topic, (this.inFlight.get(topic) ?? 1) - 1)
      const next = this.waiting.get(topic)?.shift()
      if (next) this.start(topic, next.messages).then(next.resolve, next.reject)
    })
  }
}
