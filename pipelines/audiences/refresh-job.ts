import type { Bus } from '../connectors/bus/bus.ts'
import type { ScheduledJob } from '../control/jobs.ts'
import { encodeCountRequest } from './count-requests.ts'

export const AUDIENCE_REFRESH_JOB = 'audience-counts'

/** Requests produced per bus call: bounds one produce whatever the number of audiences. */
const CHUNK = 5000

/**
 * The scheduled refresh of every audience's counts (SLUICE_AUDIENCE_REFRESH_SECONDS, default
 * hourly). It runs inside the control applier, which holds the control partition meanwhile, so it
 * counts nothing itself: it reads the live audiences' ids (one small query) and puts one count
 * request per audience on the audience-counts topic, where the audience counter (a worker
 * pipeline of its own) does the counting. Requests carry the period start as their time, so a
 * run repeated after a crash produces the same requests; the counter merges repeats.
 */
export function audienceRefreshJob(deps: { bus: Bus; topic: string; intervalMs: number }): ScheduledJob {
  return {
    name: AUDIENCE_REFRESH_JOB,
    intervalMs: deps.intervalMs,
    async run({ store, periodStart }) {
      const rows = await store.query<{ id: number | string; org_id: number | string; app_id: string }>(
        'SELECT id, org_id, app_id FROM audiences FINAL WHERE deleted_at IS NULL ORDER BY id',
      )
      for (let i = 0; i < rows.length; i += CHUNK)
        await deps.bus.produce(
          deps.topic,
          rows.slice(i, i + CHUNK).map((r) =>
            encodeCountRequest({
              v: 1,
              audience_id: Number(r.id),
              org_id: Number(r.org_id),
              app_id: r.app_id,
              requested_at: periodStart,
              reason: 'refresh',
            }),
          ),
        )
      return { audiences: rows.length }
    },
  }
}
