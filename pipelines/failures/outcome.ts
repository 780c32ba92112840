import type { BusRecord, RecordBatch } from '../connectors/bus/bus.ts'

/**
 * What became of one record in a stage, as DESIGN.md names it:
 * - `ok`: done;
 * - `reject`: refused input, recorded by the stage with its reason (e.g. `rejected_lines`); commits;
 * - `retry`: failed for now; the guard retries it within its bounds, then dead-letters it;
 * - `dead-letter`: cannot ever succeed (it does not decode, the engine refuses its bytes): kept in
 *   the dead-letter store with its stage and error, and the partition moves on.
 */
export type Outcome =
  | { kind: 'ok' }
  | { kind: 'reject'; reason: string }
  | { kind: 'retry'; error: unknown }
  | { kind: 'dead-letter'; error: unknown }

export const ok = (): Outcome => ({ kind: 'ok' })
export const reject = (reason: string): Outcome => ({ kind: 'reject', reason })
export const retryLater = (error: unknown): Outcome => ({ kind: 'retry', error })
export const deadLetter = (error: unknown): Outcome => ({ kind: 'dead-letter', error })

/**
 * A stage's answer for a batch: nothing when every record is `ok`, otherwise the records that are
 * not. Throwing stays allowed and means "retry the whole batch" (the guard bounds that too).
 */
export interface StageReport {
  outcomes: { record: BusRecord; outcome: Outcome }[]
}

export type StageHandler = (batch: RecordBatch) => Promise<StageReport | void>

/**
 * An error retrying cannot fix (a block that does not decode, bytes the engine cannot parse): the
 * guard stops retrying it at once.
 */
export class PermanentError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.name = 'PermanentError'
  }
}
