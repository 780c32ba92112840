import { audienceCounter, type CountQuery } from '../../pipelines/audiences/audience-counter.ts'
import { ChdbSideConnection } from '../../pipelines/connectors/store/chdb-side-connection.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
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
    // Embedded: counts run on a chdb connection of their own, beside the pipelines' queries (a
    // bound query would make every other bound query of the process wait for it).
    const side = store instanceof ChdbStore ? await ChdbSideConnection.open(store) : undefined
    const countQuery: CountQuery | undefined = side
      ? async (sql, params) => {
          const [row] = await side.query<Record<string, number | string>>(sql, params)
          return {
            user_count: Number(row?.user_count ?? 0),
            has_push: Number(row?.has_push ?? 0),
            seen_last_thirty: Number(row?.seen_last_thirty ?? 0),
          }
        }
      : undefined
    const counter = audienceCounter({
      store,
      ...(countQuery && { countQuery }),
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
    return { consumers: [consumer], ...(side && { close: () => side.close() }) }
  },
}
