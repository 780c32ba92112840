import type { Clock } from '../clock.ts'
import type { BusRecord } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { describeFailure } from '../failures/classify-error.ts'
import { deadLetter, PermanentError, type Outcome, type StageHandler } from '../failures/outcome.ts'
import type { ControlPlane } from './apply-command.ts'
import { commandDecoder, type ControlCommand, type ControlResult } from './commands.ts'
import { readResults, writeResults, type JournalEntry } from './control-results.ts'
import { mergeWrites, readState, writeRows } from './control-state.ts'
import type { ScheduledJob } from './jobs.ts'

export interface ControlApplierDeps {
  store: Store
  /** The control plane with the areas the composition root registered (services/control/control-plane.ts). */
  plane: ControlPlane
  /** The jobs due-job commands may name. */
  jobs: readonly ScheduledJob[]
  clock?: Pick<Clock, 'now'>
  onJobFailed?: (job: string, periodStart: number, error: unknown) => void
}

/**
 * A failure of the applier's own reads and writes. Reported as retriable, so the failure guard
 * treats it as an outage and the bus redelivers the batch for as long as it lasts; it carries
 * no `cause`, so nothing underneath can make the guard call it permanent. The control partition
 * is one ordered history: skipping a command whose journal is written would let later commands
 * reuse its ids, and the rows at fault are the applier's own, never the command's.
 */
export class ControlStoreError extends Error {
  readonly retriable = true
  constructor(error: unknown) {
    super(`control applier could not read or write the store: ${describeFailure(error, 2000)}`)
    this.name = 'ControlStoreError'
  }
}

/**
 * The stage that applies control commands, one batch of the control partition at a time:
 * 1. commands already recorded as applied are skipped (their answer stands);
 * 2. commands an earlier owner journaled but did not finish are finished from their journal:
 *    the same rows written again, the job run again, then marked applied;
 * 3. the rest are applied to the state read for them (pure: apply-command.ts), journaled with
 *    the rows they write, the rows written, due jobs run, and all marked applied.
 * A record that does not decode is dead-lettered (nothing of it was applied).
 */
export function controlApplier(deps: ControlApplierDeps): StageHandler {
  const clock = deps.clock ?? Date
  const { plane } = deps
  const decodeCommand = commandDecoder(plane.payloads)
  const jobs = new Map(deps.jobs.map((j) => [j.name, j]))
  const jobNames = new Set(jobs.keys())

  const runJob = async (entry: JournalEntry): Promise<ControlResult> => {
    const { job, period_start } = entry.command.payload as { job: string; period_start: number }
    const found = jobs.get(job)
    if (!found) return entry.result
    try {
      const output = await found.run({ store: deps.store, periodStart: period_start })
      return { status: 200, body: { job, period_start, output: output ?? null } }
    } catch (err) {
      deps.onJobFailed?.(job, period_start, err)
      return { status: 500, body: { error: describeFailure(err, 2000), job, period_start } }
    }
  }
  const isDueJob = (e: JournalEntry) => e.command.kind === 'run-job' && e.result.status === 200

  const apply = async (commands: ControlCommand[]) => {
    const { store } = deps
    // The answers recorded so far and the state the commands need, read at once (one round trip).
    const [recorded, stateBefore] = await Promise.all([
      readResults(
        store,
        commands.map((c) => c.id),
      ),
      readState(store, plane, plane.stateNeeds(commands)),
    ])
    const unfinished: JournalEntry[] = []
    const fresh: ControlCommand[] = []
    const seen = new Set<string>()
    for (const command of commands) {
      if (seen.has(command.id)) continue
      seen.add(command.id)
      const r = recorded.get(command.id)
      if (!r) fresh.push(command)
      else if (!r.applied) unfinished.push({ command, result: r, writes: r.writes ?? plane.noWrites() })
    }
    if (unfinished.length > 0) await finish(store, unfinished)
    if (fresh.length === 0) return
    // The state read above missed the rows of unfinished commands (their ids): read it again.
    const state = unfinished.length > 0 ? await readState(store, plane, plane.stateNeeds(fresh)) : stateBefore
    const { applied } = plane.applyCommands(state, fresh, jobNames)
    const needsJournal = applied.some(
      (a) => isDueJob(a) || Object.values(a.writes).some((rows: unknown[]) => rows.length > 0),
    )
    if (needsJournal) await writeResults(store, applied, false, clock.now())
    await finish(store, applied)
  }

  const finish = async (store: Store, entries: JournalEntry[]) => {
    await writeRows(
      store,
      plane,
      mergeWrites(
        plane,
        entries.map((e) => e.writes),
      ),
    )
    const done: JournalEntry[] = []
    for (const entry of entries)
      done.push(isDueJob(entry) ? { ...entry, result: await runJob(entry) } : entry)
    await writeResults(store, done, true, clock.now())
  }

  return async (batch) => {
    const outcomes: { record: BusRecord; outcome: Outcome }[] = []
    const commands: ControlCommand[] = []
    for (const record of batch.records) {
      const decoded = decodeCommand(record)
      if (decoded.ok) commands.push(decoded.command)
      else outcomes.push({ record, outcome: deadLetter(new PermanentError(decoded.reason)) })
    }
    if (commands.length > 0) {
      try {
        await apply(commands)
      } catch (err) {
        throw new ControlStoreError(err)
      }
    }
    return { outcomes }
  }
}
