import { Counter, Histogram } from 'prom-client'
import { exportWriter } from '../../pipelines/exports/export-writer.ts'
import { DAY_MS, HOUR_MS } from '../../pipelines/exports/export-kinds.ts'
import { consumeStage } from './guarded-consumer.ts'
import type { WorkerPipeline } from './worker.ts'

/**
 * The export writer: writes export files from the exports topic (requests from the edge, the daily
 * refresh, the hourly log job, the sweep), with its progress in the logs and in metrics.
 */
export const exportsPipeline: WorkerPipeline = {
  name: 'exports',
  async start(runtime) {
    const { store, files, logger, topology, config, metrics } = runtime
    const registers = [metrics.registry]
    const rows = new Counter({
      name: 'sluice_export_rows_total',
      help: 'Rows written into export files, by source type',
      labelNames: ['source'] as const,
      registers,
    })
    const written = new Counter({
      name: 'sluice_export_files_total',
      help: 'Export files written, by source type',
      labelNames: ['source'] as const,
      registers,
    })
    const bytes = new Counter({
      name: 'sluice_export_bytes_total',
      help: 'Gzip bytes of export files written, by source type',
      labelNames: ['source'] as const,
      registers,
    })
    const duration = new Histogram({
      name: 'sluice_export_file_duration_seconds',
      help: 'Time to write one export file, by source type',
      labelNames: ['source'] as const,
      buckets: [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
      registers,
    })
    const sourceOf = (fileKey: string) =>
      fileKey.startsWith('hour:') ? 'logs' : fileKey === 'changes' ? 'profile_changes' : 'full'
    const writer = exportWriter({
      store,
      files,
      settleMs: config.SLUICE_EXPORT_SETTLE_MS,
      resultTtlMs: config.SLUICE_EXPORT_RESULT_TTL_HOURS * HOUR_MS,
      logRetentionMs: config.SLUICE_EXPORT_LOG_RETENTION_DAYS * DAY_MS,
      linkTtlMs: config.SLUICE_EXPORT_LINK_TTL_SECONDS * 1000,
      onProgress: (p) => {
        if (!p.done) {
          logger.info(p, 'export file in progress')
          return
        }
        const source = sourceOf(p.file_key)
        rows.inc({ source }, p.rows)
        bytes.inc({ source }, p.bytes)
        written.inc({ source })
        duration.observe({ source }, p.elapsed_ms / 1000)
        logger.info(p, 'export file written')
      },
      onSkipped: (request, why) =>
        logger.debug(
          { export_id: request.export_id, reason: request.reason, why },
          'export file not written',
        ),
      onSwept: (removed) => {
        if (removed > 0) logger.info({ removed }, 'old export files removed')
      },
    })
    const consumer = await consumeStage(runtime, { ...topology.stages.exportWriter, run: writer })
    return { consumers: [consumer] }
  },
}
