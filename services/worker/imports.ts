import { parseTargetRules } from '../../schemas/audiences.ts'
import { encodeCountRequest } from '../../pipelines/audiences/count-requests.ts'
import { runAudienceImport } from '../../pipelines/imports/audience-import.ts'
import { decodeImportJob, type ImportJob } from '../../pipelines/imports/import-jobs.ts'
import { runProfileImport } from '../../pipelines/imports/profile-import.ts'
import { releasingMemory } from '../../pipelines/imports/release-memory.ts'
import { deadLetter, PermanentError, type StageReport } from '../../pipelines/failures/outcome.ts'
import type { RecordBatch } from '../../pipelines/connectors/bus/bus.ts'
import { AudienceControl } from '../control/audience-control.ts'
import type { Runtime } from '../runtime.ts'
import { consumeStage } from './guarded-consumer.ts'
import type { WorkerPipeline } from './worker.ts'

/**
 * The import processor: reads each import's body from the files port and applies it: profile rows
 * as blocks handed to the profile writer, audience members as a member list the audience then
 * names. A job that keeps failing (the store or the bus down) is retried and dead-lettered by the
 * guard like any record; the body is removed once the import has been read to its end.
 */
export const importsPipeline: WorkerPipeline = {
  name: 'imports',
  async start(runtime) {
    const run = importProcessor(runtime)
    const consumer = await consumeStage(runtime, { ...runtime.topology.stages.importProcessor, run })
    return { consumers: [consumer] }
  },
}

export function importProcessor(runtime: Runtime) {
  const { store, bus, files, topology, logger } = runtime
  const audiences = new AudienceControl(runtime.commands)
  const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))
  const coupling = topology.couplings.importsWaitOnProfileWriter
  let partitions: number | undefined
  // The embedded engine's allocator (jemalloc) keeps freed pages for its decay time, which an
  // import's back-to-back rounds and merges never leave it: purged once a round is staged and every
  // SLUICE_IMPORT_RELEASE_MS while an import runs, the RSS follows what the engine holds (its
  // merges and inserts; docs/imports.md, "Speed"). A server's memory is not this process's.
  const releaseMemory =
    store.kind === 'chdb'
      ? () =>
          store
            .command('SYSTEM JEMALLOC PURGE')
            .catch((err: unknown) => logger.warn({ err }, 'jemalloc purge failed'))
      : undefined
  const runOne = async (job: ImportJob) => {
    await releasingMemory(() => applyJob(job), releaseMemory, runtime.config.SLUICE_IMPORT_RELEASE_MS)
    await files.remove(job.path)
    logger.info({ import_id: job.id, kind: job.kind }, 'import read')
  }
  const applyJob = async (job: ImportJob) => {
    if (job.kind === 'profiles') {
      partitions ??= await bus.partitionCount(topology.topics.profileChanges.topic)
      await runProfileImport(job, {
        store,
        bus,
        open: (path) => files.read(path),
        topic: topology.topics.profileChanges.topic,
        partitions,
        writerBacklog: () => bus.lag(coupling.group, coupling.topic),
        roundRows: runtime.config.SLUICE_IMPORT_ROUND_ROWS,
        sleep,
        now: Date.now,
        ...(releaseMemory && { releaseMemory }),
        onRound: (row) =>
          logger.debug(
            { import_id: row.import_id, rounds: row.rounds, rows_read: row.rows_read },
            'import round handed on',
          ),
      })
    } else {
      await runAudienceImport(job, {
        store,
        open: (path) => files.read(path),
        now: Date.now,
        setLists: async (j, audienceId, lists) => {
          const given = { static: { lists } }
          const parsed = parseTargetRules(given)
          if (!parsed.ok)
            throw new PermanentError(`static rules do not parse: ${parsed.issues[0]?.message ?? ''}`)
          return audiences.update(j.org, j.app, audienceId, {
            rules: { canonical: parsed.rules as unknown as Record<string, unknown>, given },
          })
        },
        requestCount: async (j, audienceId) => {
          await bus.produce(topology.topics.audienceCounts.topic, [
            encodeCountRequest({
              v: 1,
              audience_id: audienceId,
              org_id: j.org,
              app_id: j.app,
              requested_at: Date.now(),
              reason: 'update',
            }),
          ])
        },
      })
    }
  }
  return async (batch: RecordBatch): Promise<StageReport> => {
    const report: StageReport = { outcomes: [] }
    for (const record of batch.records) {
      const decoded = decodeImportJob(record)
      if (!decoded.ok) {
        report.outcomes.push({ record, outcome: deadLetter(new PermanentError(decoded.reason)) })
        continue
      }
      await runOne(decoded.job)
    }
    return report
  }
}
