import { compileMembers } from '../audiences/compile-rules.ts'
import { readAudienceRows } from '../audiences/audience-reader.ts'
import type { Store } from '../connectors/store/store.ts'
import { parseTargetRules } from '../../schemas/audiences.ts'
import { AUDIENCE_JOB_TYPES, type AudienceJobType } from './export-kinds.ts'
import type { ExportJobRow } from './export-commands.ts'
import { hourLabel } from './export-params.ts'
import {
  audienceIdentifierQuery,
  newerThanQuery,
  logHourQuery,
  profileChangesQuery,
  profileFullQuery,
  type ExportQuery,
} from './export-queries.ts'
import { appsOfProfileDb, profileDbsOfApp, readCursor, type ExportFileRow } from './export-records.ts'

/**
 * One export file to write or serve: which key it is filed under, the query that writes it, and
 * whether the file on record is stale (data it reads has been inserted since it was written).
 * The edge asks "stale?" before it redirects; the writer asks again before it writes, so two
 * requests that raced write the file once.
 */
export interface ExportTarget {
  job: ExportJobRow
  fileKey: string
  /** `.log.gz` files are served as gzip files; `.jsonl.gz` as JSON lines (gzip when accepted). */
  extension: '.log.gz' | '.jsonl.gz'
  /** The query of a file read at `asOf` (engine ms), and the start of the range it holds. */
  query(asOf: number): Promise<{ query: ExportQuery; rangeFrom: number }>
  /** No file yet, or data newer than the file. */
  isStale(latest: ExportFileRow | undefined): Promise<boolean>
}

export interface TargetOptions {
  /** Hour (UTC start, ms) of a log export. */
  hour?: number
}

/** The target of a job (and hour, for logs); undefined for a job Sluice cannot write (yet). */
export async function exportTarget(
  store: Store,
  job: ExportJobRow,
  options: TargetOptions = {},
): Promise<ExportTarget | undefined> {
  const newer = async (what: Parameters<typeof newerThanQuery>[0], asOf: number) => {
    const q = newerThanQuery(what, asOf)
    const [row] = await store.query<{ n: number | string }>(q.sql, q.params)
    return Number(row?.n ?? 0) > 0
  }
  if (job.source_type === 'logs') {
    const hour = options.hour
    if (hour === undefined) return undefined
    const what = { kind: 'log' as const, appId: job.source_id, hourStart: hour }
    return {
      job,
      fileKey: `hour:${hourLabel(hour)}`,
      extension: '.log.gz',
      query: () => Promise.resolve({ query: logHourQuery(job.source_id, hour), rangeFrom: hour }),
      isStale: async (latest) => !latest || (await newer(what, latest.as_of)),
    }
  }
  if (job.source_type === 'profiles') {
    const db = Number(job.source_id)
    if (job.job_type === 'profile') {
      const apps = await appsOfProfileDb(store, job.org_id, job.app_id)
      const what = { kind: 'profile' as const, profiledbId: db, appIds: apps }
      return {
        job,
        fileKey: 'full',
        extension: '.jsonl.gz',
        query: () => Promise.resolve({ query: profileFullQuery(db, apps), rangeFrom: 0 }),
        isStale: async (latest) => !latest || (await newer(what, latest.as_of)),
      }
    }
    if (job.job_type === 'profile_changes') {
      return {
        job,
        fileKey: 'changes',
        extension: '.jsonl.gz',
        async query(asOf) {
          const cursor = await readCursor(store, job.id)
          return { query: profileChangesQuery(db, cursor, asOf), rangeFrom: cursor }
        },
        // Fetched whole (the cursor moved past its start), or changes arrived after it.
        async isStale(latest) {
          if (!latest) return true
          if ((await readCursor(store, job.id)) !== latest.range_from) return true
          return newer({ kind: 'changes', profiledbId: db }, latest.as_of)
        },
      }
    }
  }
  if (job.source_type === 'audiences' && (AUDIENCE_JOB_TYPES as readonly string[]).includes(job.job_type)) {
    const [audience] = await readAudienceRows(store, [Number(job.source_id)])
    if (!audience || audience.deleted_at !== null) return undefined
    const parsed = parseTargetRules(JSON.parse(audience.target_rules))
    const dbs = await profileDbsOfApp(store, audience.app_id)
    if (!parsed.ok || !dbs) return undefined
    const rules = parsed.rules
    const what = {
      kind: 'audience' as const,
      appId: audience.app_id,
      profiledbIds: [dbs.appProfiledbId, dbs.orgProfiledbId],
    }
    return {
      job,
      fileKey: 'full',
      extension: '.jsonl.gz',
      query(asOf) {
        // Windows ("in the last 30 days") are relative to the engine's clock when read.
        const members = compileMembers(rules, { appId: audience.app_id, ...dbs, now: asOf })
        const query = audienceIdentifierQuery(members, job.job_type as AudienceJobType, {
          appId: audience.app_id,
          orgProfiledbId: dbs.orgProfiledbId,
        })
        return Promise.resolve({ query, rangeFrom: 0 })
      },
      // Rules changed since the file, or data it reads.
      isStale: async (latest) =>
        !latest || audience.updated_at > latest.as_of || (await newer(what, latest.as_of)),
    }
  }
  return undefined
}
