import { systemClock, type Clock } from '../../pipelines/clock.ts'
import type { Bus } from '../../pipelines/connectors/bus/bus.ts'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { CONTROL_PARTITION, encodeCommand, type ControlResult } from '../../pipelines/control/commands.ts'
import { readApplied } from '../../pipelines/control/control-results.ts'
import type { ControlCommand } from './control-plane.ts'

/** How an edge has a control command applied: produce it, wait for its answer. */
export interface CommandSender {
  submit(command: ControlCommand): Promise<ControlResult>
}

/**
 * The command was taken but no answer came in time (no worker applies the control topic, or the
 * bus or store is down). It may still be applied later: the admin API answers 503 with Retry-After.
 */
export class ControlUnavailableError extends Error {
  readonly retriable = true
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'ControlUnavailableError'
  }
}

export interface CommandClientOptions {
  bus: Bus
  store: Store
  topic: string
  /** How long a submit waits for the answer (SLUICE_CONTROL_WAIT_MS). */
  waitMs: number
  clock?: Clock
}

/**
 * The edge's side of the control plane: produces each command onto the control partition and
 * waits, bounded, until the applier has recorded its answer in `control_results`. Works alike in
 * both modes (the local log or Kafka, chdb or a ClickHouse server), whichever process applies it.
 */
export class CommandClient implements CommandSender {
  private readonly waiter: ResultWaiter
  private readonly producer: BatchingProducer

  constructor(private readonly options: CommandClientOptions) {
    this.waiter = new ResultWaiter(options.store, options.clock ?? systemClock)
    this.producer = new BatchingProducer(options.bus, options.topic)
  }

  async submit(command: ControlCommand): Promise<ControlResult> {
    try {
      await this.producer.produce(command)
    } catch (err) {
      throw new ControlUnavailableError('could not hand the command to the control plane; retry', {
        cause: err,
      })
    }
    return this.waiter.wait(command.id, this.options.waitMs)
  }
}

/**
 * Produces commands, one produce at a time: commands submitted while one is in flight go together
 * in the next. A burst of admin writes then lands as a few multi-record batches (one fsync on the
 * local log, one request on Kafka), and the applier gets them as a few large batches instead of
 * one command per fetch (librdkafka's mock cluster hands out one produced batch per fetch).
 */
class BatchingProducer {
  private topicReady: Promise<void> | undefined
  private queue: { command: ControlCommand; resolve(): void; reject(err: unknown): void }[] = []
  private flushing = false

  constructor(
    private readonly bus: Bus,
    private readonly topic: string,
  ) {}

  produce(command: ControlCommand): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ command, resolve, reject })
      if (!this.flushing) void this.flush()
    })
  }

  private async flush(): Promise<void> {
    this.flushing = true
    try {
      while (this.queue.length > 0) {
        const batch = this.queue
        this.queue = []
        try {
          this.topicReady ??= this.bus.ensureTopics([
            { topic: this.topic, partitions: CONTROL_PARTITION + 1 },
          ])
          await this.topicReady
          await this.bus.produce(
            this.topic,
            batch.map((b) => encodeCommand(b.command)),
          )
          for (const b of batch) b.resolve()
        } catch (err) {
          this.topicReady = undefined
          for (const b of batch) b.reject(err)
        }
      }
    } finally {
      // In the same turn as the last check of the queue: a produce() after it flushes anew.
      this.flushing = false
    }
  }
}

const FIRST_POLL_MS = 5
const MAX_POLL_MS = 50

interface Waiting {
  deadline: number
  resolve(result: ControlResult): void
  reject(error: unknown): void
}

/**
 * Waits for the answers of many commands with one poll loop: each round is one query for every
 * command still waiting, so 200 concurrent admin writes cost one query per round, not 200. Rounds
 * start 5 ms apart and back off to 50 ms; a new command brings the pace back to 5 ms.
 */
export class ResultWaiter {
  private readonly waiting = new Map<string, Waiting>()
  private polling = false
  private quicken = false

  constructor(
    private readonly store: Store,
    private readonly clock: Clock,
  ) {}

  wait(commandId: string, timeoutMs: number): Promise<ControlResult> {
    return new Promise((resolve, reject) => {
      this.waiting.set(commandId, { deadline: this.clock.now() + timeoutMs, resolve, reject })
      this.quicken = true
      if (this.polling) return
      this.polling = true
      this.poll().catch((err: unknown) => {
        for (const w of this.waiting.values()) w.reject(err)
        this.waiting.clear()
      })
    })
  }

  private async poll(): Promise<void> {
    let interval = FIRST_POLL_MS
    let lastError: unknown
    try {
      while (this.waiting.size > 0) {
        interval = this.quicken ? FIRST_POLL_MS : Math.min(interval * 2, MAX_POLL_MS)
        this.quicken = false
        await this.clock.sleep(interval)
        let answers = new Map<string, ControlResult>()
        try {
          answers = await readApplied(this.store, [...this.waiting.keys()])
          lastError = undefined
        } catch (err) {
          // A store hiccup is retried until the deadline; the error explains a timeout, if one follows.
          lastError = err
        }
        this.settle(answers, lastError)
      }
    } finally {
      // In the same turn as the last check of `waiting`: a wait() after it starts a new loop.
      this.polling = false
    }
  }

  private settle(answers: Map<string, ControlResult>, lastError: unknown): void {
    const now = this.clock.now()
    for (const [id, w] of this.waiting) {
      const answer = answers.get(id)
      if (answer) w.resolve(answer)
      else if (now >= w.deadline)
        w.reject(
          new ControlUnavailableError(
            'the control plane did not apply the command in time (is a worker running?); it may still be applied',
            lastError === undefined ? undefined : { cause: lastError },
          ),
        )
      else continue
      this.waiting.delete(id)
    }
  }
}
