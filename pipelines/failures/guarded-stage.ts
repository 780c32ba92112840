import type { BusRecord, RecordBatch } from '../connectors/bus/bus.ts'
import { classifyFailure, describeFailure, type FailureKind } from './classify-error.ts'
import type { DeadLetter, DeadLetterSink } from './dead-letters.ts'
import type { StageHandler, StageReport } from './outcome.ts'
import { realClock, retry, type RetryClock, type RetryPolicy } from './retry.ts'

export interface GuardOptions {
  stage: string
  deadLetters: DeadLetterSink
  /** Bounds of retrying a whole batch before it is split record by record. */
  batchPolicy?: RetryPolicy
  /** Bounds of retrying one record on its own. */
  recordPolicy?: RetryPolicy
  /**
   * Time one batch may spend retrying its records one by one; past it, each remaining record gets
   * a single attempt, so a batch of thousands whose every record fails is not retried for hours.
   */
  isolationBudgetMs?: number
  clock?: RetryClock
  /**
   * Asked before dead-lettering records that failed with an unknown error: false means the store
   * is down, which is an outage, not a poison record, so nothing is dead-lettered.
   */
  healthy?: () => Promise<boolean>
  onRetry?: (info: { batch: RecordBatch; attempt: number; error: unknown; delayMs: number }) => void
  onDeadLetter?: (letter: DeadLetter, kind: FailureKind) => void
}

export const DEFAULT_BATCH_POLICY: RetryPolicy = {
  attempts: 3,
  deadlineMs: 10_000,
  baseDelayMs: 200,
  maxDelayMs: 2_000,
}
export const DEFAULT_RECORD_POLICY: RetryPolicy = {
  attempts: 3,
  deadlineMs: 5_000,
  baseDelayMs: 100,
  maxDelayMs: 1_000,
}
export const DEFAULT_ISOLATION_BUDGET_MS = 30_000

/**
 * Thrown by a guarded handler when the failure is an outage (a dependency down, or the
 * dead-letter store itself failing): the bus then redelivers the batch after its backoff, so
 * nothing is ever dropped, and nothing is dead-lettered for a fault that is not the record's.
 */
export class OutageError extends Error {
  constructor(message: string, options: { cause: unknown }) {
    super(message, options)
    this.name = 'OutageError'
  }
}

interface Failed {
  record: BusRecord
  error: unknown
  attempts: number
  kind: FailureKind
}

type Attempt = { ok: true; report: StageReport | void } | { ok: false; failure: Omit<Failed, 'record'> }

/**
 * Wraps a stage's batch handler so that no record can stall its partition:
 * 1. the batch is retried within `batchPolicy` (a permanent error stops at once);
 * 2. if it still fails, its records are run one at a time, in offset order, each retried within
 *    `recordPolicy`; records a stage reports as `retry` are run the same way after the batch;
 * 3. records that still fail, and records the stage reported as `dead-letter`, go to the
 *    dead-letter store with the stage and the error; the rest are processed; the batch commits.
 * An outage throws instead (see OutageError). Records are handled again when isolated, which is
 * safe because every sink is idempotent by a natural key (the same holds for any redelivery).
 */
export function guardStage(
  handler: StageHandler,
  options: GuardOptions,
): (batch: RecordBatch) => Promise<void> {
  const clock = options.clock ?? realClock
  const batchPolicy = options.batchPolicy ?? DEFAULT_BATCH_POLICY
  const recordPolicy = options.recordPolicy ?? DEFAULT_RECORD_POLICY
  const isolationBudgetMs = options.isolationBudgetMs ?? DEFAULT_ISOLATION_BUDGET_MS

  const attempt = async (batch: RecordBatch, policy: RetryPolicy): Promise<Attempt> => {
    const result = await retry(
      async () => {
        const report = await handler(batch)
        // A single record the stage wants retried is a failed attempt of that record.
        const again = batch.records.length === 1 ? retriesOf(report)[0] : undefined
        if (again) throw again.error
        return report
      },
      policy,
      {
        clock,
        shouldRetry: (error) => classifyFailure(error) !== 'permanent',
        onRetry: (error, n, delayMs) => options.onRetry?.({ batch, attempt: n, error, delayMs }),
      },
    )
    if (result.ok) return { ok: true, report: result.value }
    return {
      ok: false,
      failure: { error: result.error, attempts: result.attempts, kind: classifyFailure(result.error) },
    }
  }

  return async (batch) => {
    const failed: Failed[] = []
    let isolate: BusRecord[]
    const whole = await attempt(batch, batchPolicy)
    if (whole.ok) {
      for (const f of deadLettersOf(whole.report)) failed.push(f)
      isolate = retriesOf(whole.report).map((r) => r.record)
    } else {
      if (whole.failure.kind === 'outage')
        throw new OutageError('stage failed: outage', { cause: whole.failure.error })
      isolate = batch.records
    }

    const budgetEnd = clock.now() + isolationBudgetMs
    for (const record of isolate) {
      const remaining = Math.max(0, budgetEnd - clock.now())
      const policy = { ...recordPolicy, deadlineMs: Math.min(recordPolicy.deadlineMs, remaining) }
      const single = await attempt(
        { topic: batch.topic, partition: batch.partition, records: [record] },
        policy,
      )
      if (single.ok) {
        for (const f of deadLettersOf(single.report)) failed.push(f)
      } else {
        if (single.failure.kind === 'outage') {
          throw new OutageError('stage failed: outage', { cause: single.failure.error })
        }
        failed.push({ record, ...single.failure })
      }
    }
    if (failed.length === 0) return

    if (options.healthy && failed.some((f) => f.kind === 'unknown') && !(await isHealthy(options.healthy))) {
      throw new OutageError('stage failed and the store does not answer', { cause: failed[0]!.error })
    }
    const deadAt = clock.now()
    const letters = failed.map((f): DeadLetter => ({
      stage: options.stage,
      record: f.record,
      error: describeFailure(f.error),
      attempts: f.attempts,
      deadAt,
    }))
    try {
      await options.deadLetters.add(letters)
    } catch (err) {
      throw new OutageError('could not store dead letters', { cause: err })
    }
    letters.forEach((letter, i) => options.onDeadLetter?.(letter, failed[i]!.kind))
  }
}

function retriesOf(report: StageReport | void) {
  const found: { record: BusRecord; error: unknown }[] = []
  for (const { record, outcome } of report?.outcomes ?? []) {
    if (outcome.kind === 'retry') found.push({ record, error: outcome.error })
  }
  return found
}

function deadLettersOf(report: StageReport | void): Failed[] {
  const found: Failed[] = []
  for (const { record, outcome } of report?.outcomes ?? []) {
    if (outcome.kind === 'dead-letter')
      found.push({ record, error: outcome.error, attempts: 1, kind: 'permanent' })
  }
  return found
}

async function isHealthy(probe: () => Promise<boolean>): Promise<boolean> {
  try {
    return await probe()
  } catch {
    return false
  }
}
