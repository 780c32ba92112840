import type { Store } from '../connectors/store/store.ts'
import type { ExportJobRow } from './export-commands.ts'
import { EXPORT_JOB_COLUMNS, toJobRow, type StoredJobRow } from './export-control-state.ts'
import type { SourceType } from './export-kinds.ts'

/**
 * Reads and writes of the export tables outside the control plane: jobs (read only), files,
 * requests and cursors. Every read of a job or file is by export id or scoped by org.
 */

/** A row of `export_files`; times in ms. */
export interface ExportFileRow {
  export_id: number
  org_id: number
  file_key: string
  path: string
  rows: number
  bytes: number
  as_of: number
  range_from: number
  generated_at: number
  expire_at: number
}

const FILE_COLUMNS = `export_id, org_id, file_key, path, rows, bytes, toUnixTimestamp64Milli(as_of) AS as_of,
  toUnixTimestamp64Milli(range_from) AS range_from, toUnixTimestamp64Milli(generated_at) AS generated_at,
  toUnixTimestamp64Milli(expire_at) AS expire_at`

type Stored<T> = { [K in keyof T]: T[K] extends number ? number | string : T[K] }

function toFileRow(r: Stored<ExportFileRow>): ExportFileRow {
  return {
    export_id: Number(r.export_id),
    org_id: Number(r.org_id),
    file_key: r.file_key,
    path: r.path,
    rows: Number(r.rows),
    bytes: Number(r.bytes),
    as_of: Number(r.as_of),
    range_from: Number(r.range_from),
    generated_at: Number(r.generated_at),
    expire_at: Number(r.expire_at),
  }
}

export async function readJob(store: Store, id: number): Promise<ExportJobRow | undefined> {
  const rows = await store.query<StoredJobRow>(
    `SELECT ${EXPORT_JOB_COLUMNS} FROM export_jobs FINAL WHERE id = {id:UInt64}`,
    { id },
  )
  return rows[0] ? toJobRow(rows[0]) : undefined
}

/** The jobs of an org (of one source type), disabled ones included, by id. */
export async function readJobsOfOrg(
  store: Store,
  orgId: number,
  sourceType?: SourceType,
): Promise<ExportJobRow[]> {
  const rows = await store.query<StoredJobRow>(
    `SELECT ${EXPORT_JOB_COLUMNS} FROM export_jobs FINAL
     WHERE org_id = {org:UInt64} ${sourceType ? 'AND source_type = {type:String}' : ''} ORDER BY id`,
    { org: orgId, ...(sourceType ? { type: sourceType } : {}) },
  )
  return rows.map(toJobRow)
}

/** The job of (source, job type), enabled or not; whichever org it belongs to. */
export async function findJob(
  store: Store,
  sourceType: SourceType,
  sourceId: string,
  jobType: string,
): Promise<ExportJobRow | undefined> {
  const rows = await store.query<StoredJobRow>(
    `SELECT ${EXPORT_JOB_COLUMNS} FROM export_jobs FINAL
     WHERE source_type = {type:String} AND source_id = {source:String} AND job_type = {job:String}
     ORDER BY enabled DESC, id LIMIT 1`,
    { type: sourceType, source: sourceId, job: jobType },
  )
  return rows[0] ? toJobRow(rows[0]) : undefined
}

/** Every enabled job (what the refresh jobs go through). */
export async function readEnabledJobs(
  store: Store,
  sourceTypes: readonly SourceType[],
): Promise<ExportJobRow[]> {
  const rows = await store.query<StoredJobRow>(
    `SELECT ${EXPORT_JOB_COLUMNS} FROM export_jobs FINAL
     WHERE enabled = 1 AND source_type IN {types:Array(String)} ORDER BY id`,
    { types: [...sourceTypes] },
  )
  return rows.map(toJobRow)
}

/** The newest file of an export (of one key when given). */
export async function latestFile(
  store: Store,
  exportId: number,
  fileKey?: string,
): Promise<ExportFileRow | undefined> {
  const rows = await store.query<Stored<ExportFileRow>>(
    `SELECT ${FILE_COLUMNS} FROM export_files FINAL
     WHERE export_id = {id:UInt64} ${fileKey === undefined ? '' : 'AND file_key = {key:String}'}
     ORDER BY generated_at DESC LIMIT 1`,
    { id: exportId, ...(fileKey === undefined ? {} : { key: fileKey }) },
  )
  return rows[0] ? toFileRow(rows[0]) : undefined
}

/** The newest file of each of these exports. */
export async function latestFiles(
  store: Store,
  exportIds: readonly number[],
): Promise<Map<number, ExportFileRow>> {
  if (exportIds.length === 0) return new Map()
  const rows = await store.query<Stored<ExportFileRow>>(
    `SELECT ${FILE_COLUMNS} FROM export_files FINAL WHERE export_id IN {ids:Array(UInt64)}
     ORDER BY generated_at DESC LIMIT 1 BY export_id`,
    { ids: [...exportIds] },
  )
  return new Map(rows.map((r) => [Number(r.export_id), toFileRow(r)]))
}

/** The file listed under a path (what a signed link names). */
export async function fileAtPath(store: Store, path: string): Promise<ExportFileRow | undefined> {
  const rows = await store.query<Stored<ExportFileRow>>(
    `SELECT ${FILE_COLUMNS} FROM export_files WHERE path = {path:String} ORDER BY generated_at DESC LIMIT 1`,
    { path },
  )
  return rows[0] ? toFileRow(rows[0]) : undefined
}

/** Every path a current file row names, with when it was written and when it expires. */
export async function livePaths(
  store: Store,
): Promise<Map<string, { generated_at: number; expire_at: number }>> {
  const rows = await store.query<{ path: string; generated_at: number | string; expire_at: number | string }>(
    `SELECT path, toUnixTimestamp64Milli(generated_at) AS generated_at, toUnixTimestamp64Milli(expire_at) AS expire_at
     FROM export_files FINAL`,
  )
  return new Map(
    rows.map((r) => [r.path, { generated_at: Number(r.generated_at), expire_at: Number(r.expire_at) }]),
  )
}

export async function insertFile(store: Store, row: ExportFileRow): Promise<void> {
  await store.insert('export_files', [row])
}

export async function lastRequests(store: Store, exportIds: readonly number[]): Promise<Map<number, number>> {
  if (exportIds.length === 0) return new Map()
  const rows = await store.query<{ export_id: number | string; at: number | string }>(
    `SELECT export_id, toUnixTimestamp64Milli(max(requested_at)) AS at FROM export_requests
     WHERE export_id IN {ids:Array(UInt64)} GROUP BY export_id`,
    { ids: [...exportIds] },
  )
  return new Map(rows.map((r) => [Number(r.export_id), Number(r.at)]))
}

export async function recordRequest(store: Store, exportId: number, at: number): Promise<void> {
  await store.insert('export_requests', [{ export_id: exportId, requested_at: at }])
}

/** The profile_changes cursor: the as_of of the last file fetched whole (0 before any). */
export async function readCursor(store: Store, exportId: number): Promise<number> {
  const rows = await store.query<{ cursor: number | string }>(
    `SELECT toUnixTimestamp64Milli(max(cursor)) AS cursor FROM export_cursors WHERE export_id = {id:UInt64}`,
    { id: exportId },
  )
  return Number(rows[0]?.cursor ?? 0)
}

/** Moves the cursor forward (a smaller value changes nothing: the table keeps the largest). */
export async function moveCursor(store: Store, exportId: number, cursor: number, at: number): Promise<void> {
  await store.insert('export_cursors', [{ export_id: exportId, cursor, moved_at: at }])
}

/** The apps whose SDK data make the auto-profiles of a profile db: its app, or every app of its org. */
export async function appsOfProfileDb(store: Store, orgId: number, appId: string): Promise<string[]> {
  if (appId !== '') return [appId]
  const rows = await store.query<{ app_id: string }>(
    'SELECT app_id FROM apps FINAL WHERE org_id = {org:UInt64} AND deleted = 0 ORDER BY app_id',
    { org: orgId },
  )
  return rows.map((r) => r.app_id)
}

/** The profile dbs an app's audiences read: the app's own and its org's. */
export async function profileDbsOfApp(
  store: Store,
  appId: string,
): Promise<{ appProfiledbId: number; orgProfiledbId: number } | undefined> {
  const rows = await store.query<{ app_db: number | string; org_db: number | string }>(
    `SELECT a.profiledb_id AS app_db, o.profiledb_id AS org_db
     FROM (SELECT org_id, profiledb_id FROM apps FINAL WHERE app_id = {app:String} AND deleted = 0) AS a
     INNER JOIN (SELECT id, profiledb_id FROM orgs FINAL) AS o ON o.id = a.org_id`,
    { app: appId },
  )
  const row = rows[0]
  return row ? { appProfiledbId: Number(row.app_db), orgProfiledbId: Number(row.org_db) } : undefined
}
