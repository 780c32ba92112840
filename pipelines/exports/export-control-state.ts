import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import type { ExportControlState, ExportJobRow, ExportPlanRow, ExportStateNeeds } from './export-commands.ts'
import type { ExportPlan, SourceType } from './export-kinds.ts'

/** The columns of `export_jobs` as rows, times in ms (64-bit integers arrive as strings). */
export const EXPORT_JOB_COLUMNS = `id, org_id, source_type, source_id, job_type, name, app_id, enabled,
  toUnixTimestamp64Milli(enabled_at) AS enabled_at, toUnixTimestamp64Milli(disabled_at) AS disabled_at,
  toUnixTimestamp64Milli(created_at) AS created_at, version`

export interface StoredJobRow {
  id: number | string
  org_id: number | string
  source_type: string
  source_id: string
  job_type: string
  name: string
  app_id: string
  enabled: number | string
  enabled_at: number | string
  disabled_at: number | string | null
  created_at: number | string
  version: number | string
}

export function toJobRow(r: StoredJobRow): ExportJobRow {
  return {
    id: Number(r.id),
    org_id: Number(r.org_id),
    source_type: r.source_type as SourceType,
    source_id: r.source_id,
    job_type: r.job_type,
    name: r.name,
    app_id: r.app_id,
    enabled: Number(r.enabled) === 1 ? 1 : 0,
    enabled_at: Number(r.enabled_at),
    disabled_at: r.disabled_at === null ? null : Number(r.disabled_at),
    created_at: Number(r.created_at),
    version: Number(r.version),
  }
}

/**
 * What the control applier reads of exports before a batch: the sequence, the named orgs' jobs
 * and plans, and the sources the commands name.
 */
export async function readExportState(store: Store, needs: ExportStateNeeds): Promise<ExportControlState> {
  const none = needs.orgIds.length === 0
  const [max, orgs, jobs, plans, dbs, apps, audiences] = await Promise.all([
    store.query<{ id: number | string }>('SELECT max(id) AS id FROM export_jobs'),
    none
      ? []
      : store.query<{ id: number | string }>('SELECT DISTINCT id FROM orgs WHERE id IN {ids:Array(UInt64)}', {
          ids: needs.orgIds,
        }),
    none
      ? []
      : store.query<StoredJobRow>(
          `SELECT ${EXPORT_JOB_COLUMNS} FROM export_jobs FINAL WHERE org_id IN {orgs:Array(UInt64)}`,
          { orgs: needs.orgIds },
        ),
    none
      ? []
      : store.query<{ org_id: number | string; plan: string; version: number | string }>(
          'SELECT org_id, plan, version FROM export_plans FINAL WHERE org_id IN {orgs:Array(UInt64)}',
          { orgs: needs.orgIds },
        ),
    needs.profileDbIds.length === 0
      ? []
      : store.query<{ id: number | string; org_id: number | string; app_id: string }>(
          'SELECT id, org_id, app_id FROM profile_dbs FINAL WHERE id IN {ids:Array(UInt64)}',
          { ids: needs.profileDbIds },
        ),
    needs.appIds.length === 0 ? [] : readApps(store, needs.appIds),
    needs.audienceIds.length === 0 ? [] : readAudiences(store, needs.audienceIds),
  ])
  return {
    maxId: Number(max[0]?.id ?? 0),
    orgs: new Set(orgs.map((o) => Number(o.id))),
    jobs: new Map(jobs.map((j) => [Number(j.id), toJobRow(j)])),
    plans: new Map(
      plans.map((p): [number, ExportPlanRow] => [
        Number(p.org_id),
        { org_id: Number(p.org_id), plan: p.plan as ExportPlan, version: Number(p.version) },
      ]),
    ),
    profileDbs: new Map(dbs.map((d) => [Number(d.id), { org_id: Number(d.org_id), app_id: d.app_id }])),
    apps: new Map(apps.map((a) => [a.app_id, { org_id: Number(a.org_id), name: a.name }])),
    audiences: new Map(
      audiences.map((a) => [Number(a.id), { org_id: Number(a.org_id), app_id: a.app_id, name: a.name }]),
    ),
  }
}

async function readApps(store: Store, appIds: string[]) {
  const set = stringSet('apps', appIds)
  return store.query<{ app_id: string; org_id: number | string; name: string }>(
    `SELECT app_id, org_id, name FROM apps FINAL WHERE app_id IN ${set.sql} AND deleted = 0`,
    { apps: set.value },
  )
}

/** Live audiences. */
async function readAudiences(store: Store, ids: number[]) {
  return store.query<{ id: number | string; org_id: number | string; app_id: string; name: string }>(
    'SELECT id, org_id, app_id, name FROM audiences FINAL WHERE id IN {ids:Array(UInt64)} AND deleted_at IS NULL',
    { ids },
  )
}
