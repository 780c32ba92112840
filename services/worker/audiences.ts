import { audienceCounter } from '../../pipelines/audiences/audience-counter.ts'
import { consumeStage } from './guarded-consumer.ts'
import type { WorkerPipeline } from './worker.ts'

/**
 * The audience counter: computes the segmentation counts of the audiences named on the
 * audience-counts topic (by the edge on create, update and recompute, and by the scheduled
 * refresh) and writes them to `audience_counts`. A pipeline of its own, so counting never runs
 * on the control partition.
 */
export const audiencesPipeline: WorkerPipeline = {
  name: 'audiences',
  async start(runtime) {
    const { store, control, logger, topology } = runtime
    const counter = audienceCounter({
      store,
      profileDbs: {
        async profileDbsOf(appId) {
          const app = await control.getApp(appId)
          const org = app && (await control.getOrg(app.org_id))
          return app && org
            ? { appProfiledbId: app.profiledb_id, orgProfiledbId: org.profiledb_id }
            : undefined
        },
      },
      onCounted: (audienceId, ms) => logger.debug({ audience_id: audienceId, ms }, 'audience counted'),
    })
    const consumer = await consumeStage(runtime, { ...topology.stages.audienceCounter, run: counter })
    return { consumers: [consumer] }
  },
}
