import type { Bus } from '../connectors/bus/bus.ts'
import type { ScheduledJob } from '../control/jobs.ts'
import { HOUR_MS } from './export-kinds.ts'
import { lastRequests, readEnabledJobs } from './export-records.ts'
import { stateAt } from './export-state.ts'
import { encodeExportRequest, type ExportRequest } from './generation-requests.ts'
import {
  hourComplete,
  hourStartOf,
  latestRefreshAt,
  refreshDate,
  type RefreshTime,
} from './refresh-schedule.ts'
import { liveAudienceIds } from './export-sources.ts'

/**
 * The scheduled jobs of exports. Each runs in the control applier (so once per period, however
 * many schedulers emit it), and only enqueues: the files are written by the export writer.
 */
export interface ExportJobDeps {
  bus: Bus
  /** The exports topic. */
  topic: string
  refreshTime: RefreshTime
  idleMs: number
  /** How long after an hour ends its log file is first written (late SDK rows). */
  logGraceMs: number
}

const enqueue = async (deps: ExportJobDeps, requests: ExportRequest[]) => {
  if (requests.length > 0) await deps.bus.produce(deps.topic, requests.map(encodeExportRequest))
}

/**
 * The daily refresh of audience and profile exports. Its period is a day that starts at the
 * refresh time in the zone (08:00 America/New_York), not a multiple of a fixed interval: the
 * period of a run is "the latest refresh instant that has passed", the same for every scheduler,
 * so the due-job id `export-refresh:<instant>` is emitted by all and run once. Exports idle for 45
 * days, disabled, or of a deleted audience are not refreshed.
 */
export function exportRefreshJob(deps: ExportJobDeps): ScheduledJob {
  return {
    name: 'export-refresh',
    // Only a fallback: periodOf decides the periods.
    intervalMs: 24 * HOUR_MS,
    periodOf: (now) => latestRefreshAt(now, deps.refreshTime),
    async run({ store, periodStart }) {
      const now = Date.now()
      const jobs = await readEnabledJobs(store, ['audiences', 'profiles'])
      const [requested, audiences] = await Promise.all([
        lastRequests(
          store,
          jobs.map((j) => j.id),
        ),
        liveAudienceIds(
          store,
          jobs.filter((j) => j.source_type === 'audiences').map((j) => Number(j.source_id)),
        ),
      ])
      const due = jobs.filter(
        (j) =>
          stateAt(
            {
              enabled: true,
              enabledAt: j.enabled_at,
              lastRequestedAt: requested.get(j.id),
              sourceExists: j.source_type !== 'audiences' || audiences.has(Number(j.source_id)),
            },
            now,
            deps.idleMs,
          ) === 'available',
      )
      await enqueue(
        deps,
        due.map((j) => ({
          v: 1,
          kind: 'generate',
          export_id: j.id,
          reason: 'daily',
          refresh_at: periodStart,
          requested_at: now,
        })),
      )
      return { date: refreshDate(periodStart, deps.refreshTime.zone), enqueued: due.length }
    },
  }
}

/** Hours a run of the log job looks back over: a missed run (a restart) is caught up. */
const LOG_LOOKBACK_HOURS = 3

/**
 * Every 5 minutes: the completed hours of the last few of each app with log exports, so each
 * hour's file is written soon after the hour (plus its grace) ends. The writer writes only what
 * is missing or stale (rows inserted after the file), so asking again costs a look-up.
 */
export function logExportJob(deps: ExportJobDeps): ScheduledJob {
  return {
    name: 'log-exports',
    intervalMs: 5 * 60_000,
    async run({ store }) {
      return enqueueLogHours(deps, await readEnabledJobs(store, ['logs']), Date.now())
    },
  }
}

async function enqueueLogHours(
  deps: ExportJobDeps,
  jobs: Awaited<ReturnType<typeof readEnabledJobs>>,
  now: number,
) {
  const latest = hourStartOf(now - HOUR_MS)
  const hours: number[] = []
  for (let h = latest; h > latest - LOG_LOOKBACK_HOURS * HOUR_MS; h -= HOUR_MS)
    if (hourComplete(h, now, deps.logGraceMs)) hours.push(h)
  const requests: ExportRequest[] = jobs.flatMap((j) =>
    hours.map((hour) => ({
      v: 1 as const,
      kind: 'generate' as const,
      export_id: j.id,
      hour,
      reason: 'hourly' as const,
      requested_at: now,
    })),
  )
  await enqueue(deps, requests)
  return { apps: jobs.length, hours: hours.length }
}

/** Hourly: remove expired files and files replaced long enough ago that no link to them is valid. */
export function exportSweepJob(deps: Pick<ExportJobDeps, 'bus' | 'topic'>): ScheduledJob {
  return {
    name: 'export-sweep',
    intervalMs: HOUR_MS,
    async run({ periodStart }) {
      await deps.bus.produce(deps.topic, [
        encodeExportRequest({ v: 1, kind: 'sweep', requested_at: periodStart }),
      ])
      return { enqueued: 1 }
    },
  }
}
