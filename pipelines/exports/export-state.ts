import { DAY_MS } from './export-kinds.ts'

/**
 * The lifecycle of an audience or profile export (the spec's states table), pure.
 *
 *   not enabled --enable (source exists)--> available       (refreshed daily)
 *   available   --45 days without a request--> unavailable  (refreshing stops; API answers 404)
 *   available   --audience deleted--> unavailable            (refreshing stops)
 *   any enabled --disable--> disabled
 *   disabled / unavailable --enable--> available             (the dashboard re-enables)
 *
 * Only enabling and disabling are recorded (control commands); "unavailable" is derived when it
 * is asked for, from the last enabling, the last request and whether the source still exists, so
 * no job has to flip it and two readers always agree.
 */
export type ExportState = 'not_enabled' | 'available' | 'unavailable' | 'disabled'

export type ExportEvent =
  | { kind: 'enable'; sourceExists: boolean }
  | { kind: 'disable' }
  | { kind: 'idle' }
  | { kind: 'source-deleted' }
  | { kind: 'request' }

export const DEFAULT_IDLE_MS = 45 * DAY_MS

/** The spec's transitions. An event with no row for the state leaves it as it is. */
export function nextState(state: ExportState, event: ExportEvent): ExportState {
  switch (event.kind) {
    case 'enable':
      // Enabling an unavailable or disabled export starts it afresh; a missing source refuses it.
      return event.sourceExists ? 'available' : state
    case 'disable':
      return state === 'not_enabled' ? 'not_enabled' : 'disabled'
    case 'idle':
    case 'source-deleted':
      return state === 'available' ? 'unavailable' : state
    case 'request':
      return state
  }
}

/** What is recorded of an export job, times in ms. */
export interface JobFacts {
  enabled: boolean
  enabledAt: number
  /** The last request through the API; undefined if never. */
  lastRequestedAt: number | undefined
  /** The exported source still exists (an audience not deleted, a profile db, an app). */
  sourceExists: boolean
}

/** The state of a recorded job at `now`: the transitions above, replayed from what is recorded. */
export function stateAt(job: JobFacts | undefined, now: number, idleMs = DEFAULT_IDLE_MS): ExportState {
  if (!job) return 'not_enabled'
  if (!job.enabled) return 'disabled'
  let state = nextState('not_enabled', { kind: 'enable', sourceExists: true })
  if (!job.sourceExists) state = nextState(state, { kind: 'source-deleted' })
  if (now - lastActivity(job) > idleMs) state = nextState(state, { kind: 'idle' })
  return state
}

/** Enabling counts as activity: a re-enabled export has 45 days again before it idles. */
export const lastActivity = (job: Pick<JobFacts, 'enabledAt' | 'lastRequestedAt'>) =>
  Math.max(job.enabledAt, job.lastRequestedAt ?? 0)

/** When an available export goes unavailable if nobody requests it. */
export const idleDeadline = (
  job: Pick<JobFacts, 'enabledAt' | 'lastRequestedAt'>,
  idleMs = DEFAULT_IDLE_MS,
) => lastActivity(job) + idleMs
