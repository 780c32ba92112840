import { systemClock, type Clock } from '../../../pipelines/clock.ts'
import type { Bus } from '../../../pipelines/connectors/bus/bus.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import { latestFile, type ExportFileRow } from '../../../pipelines/exports/export-records.ts'
import type { ExportTarget } from '../../../pipelines/exports/export-targets.ts'
import { encodeExportRequest } from '../../../pipelines/exports/generation-requests.ts'
import { SluiceError } from '../../shared/errors.ts'

export interface FreshFilesOptions {
  bus: Bus
  store: Store
  /** The exports topic. */
  topic: string
  /** How long a request waits for its file to be written. */
  waitMs: number
  clock?: Clock
}

const FIRST_POLL_MS = 100
const MAX_POLL_MS = 1000

/**
 * The edge's side of "redirect to an up-to-date file": the file on record when nothing it reads
 * has changed since it was written; otherwise a request to the export writer (the exports topic)
 * and a bounded wait for the new file. Past the wait the answer is 404 with Retry-After (the
 * spec's "export not yet completed"), and the file keeps being written.
 */
export class FreshFiles {
  private readonly clock: Clock

  constructor(private readonly options: FreshFilesOptions) {
    this.clock = options.clock ?? systemClock
  }

  async get(target: ExportTarget, hour?: number): Promise<ExportFileRow> {
    const { store } = this.options
    const first = await latestFile(store, target.job.id, target.fileKey)
    if (first && !(await target.isStale(first))) return first
    try {
      await this.options.bus.produce(this.options.topic, [
        encodeExportRequest({
          v: 1,
          kind: 'generate',
          export_id: target.job.id,
          ...(hour === undefined ? {} : { hour }),
          reason: 'request',
          requested_at: this.clock.now(),
        }),
      ])
    } catch (err) {
      throw new SluiceError('bus_unavailable', 503, 'could not ask for the export file; retry', {
        retriable: true,
        headers: { 'Retry-After': '5' },
        cause: err,
      })
    }
    const before = first?.generated_at ?? -1
    const deadline = this.clock.now() + this.options.waitMs
    let interval = FIRST_POLL_MS
    while (this.clock.now() < deadline) {
      await this.clock.sleep(Math.min(interval, Math.max(0, deadline - this.clock.now())))
      interval = Math.min(interval * 2, MAX_POLL_MS)
      const latest = await latestFile(store, target.job.id, target.fileKey)
      // A newer file, or the writer found the one on record fresh after all.
      if (latest && (latest.generated_at > before || !(await target.isStale(latest)))) return latest
    }
    throw new SluiceError(
      'export_not_ready',
      404,
      'the export file is being written and is not complete yet; retry in a few seconds',
      { retriable: true, headers: { 'Retry-After': '10' } },
    )
  }
}
