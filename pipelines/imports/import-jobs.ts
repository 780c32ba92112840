import type { BusRecord, ProduceMessage } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import {
  IMPORT_LIMITS,
  type AudienceImportOptions,
  type ImportCompression,
  type ImportFormat,
  type ImportKind,
  type ImportState,
  type RejectedRow,
} from '../../schemas/imports.ts'

/**
 * An import as the edge hands it to the import processor: a small record on the imports topic
 * naming the body it stored durably in the files port (a 1 GB body is never one bus record).
 */
export interface ImportJob {
  v: 1
  id: string
  kind: ImportKind
  org: number
  /** App key of app-level profiles and of audiences; '' for org-level profiles. */
  app: string
  /** Profile db the rows go to (profiles), or the org's (audiences: e-mails are org-level). */
  db: number
  format: ImportFormat
  compression: ImportCompression
  path: string
  bytes: number
  receivedAt: number
  audience?: AudienceImportOptions & { audience_id: number }
}

export const encodeImportJob = (job: ImportJob): ProduceMessage => ({
  // Imports into one audience are applied one after the other (an `add` reads the lists before).
  key: job.audience ? `audience:${job.app}:${job.audience.audience_id}` : job.id,
  value: Buffer.from(JSON.stringify(job)),
})

export function decodeImportJob(
  record: BusRecord,
): { ok: true; job: ImportJob } | { ok: false; reason: string } {
  let value: unknown
  try {
    value = JSON.parse(record.value.toString('utf8'))
  } catch {
    return { ok: false, reason: 'record is not JSON' }
  }
  const j = value as Partial<ImportJob> | null
  if (
    !j ||
    j.v !== 1 ||
    typeof j.id !== 'string' ||
    (j.kind !== 'profiles' && j.kind !== 'audience') ||
    !Number.isSafeInteger(j.org) ||
    !Number.isSafeInteger(j.db) ||
    typeof j.app !== 'string' ||
    (j.format !== 'csv' && j.format !== 'jsonl') ||
    (j.compression !== 'gzip' && j.compression !== 'none') ||
    typeof j.path !== 'string' ||
    typeof j.receivedAt !== 'number' ||
    (j.kind === 'audience' && !j.audience)
  )
    return { ok: false, reason: 'record is not an import job' }
  return { ok: true, job: j as ImportJob }
}

/** A row of `imports` (migration 025); times in ms. */
export interface ImportRow {
  import_id: string
  org_id: number
  kind: ImportKind
  app_id: string
  profiledb_id: number
  format: ImportFormat
  compression: ImportCompression
  path: string
  body_bytes: number
  options: string
  state: ImportState
  received_at: number
  updated_at: number
  rows_read: number
  rows_rejected: number
  rounds: number
  checkpoint_line: number
  blocks: number
  audience_id: number
  list_id: string
  members_known: number
  members_unknown: number
  error: string
  version: number
}

export function newImportRow(job: ImportJob, now: number): ImportRow {
  return {
    import_id: job.id,
    org_id: job.org,
    kind: job.kind,
    app_id: job.app,
    profiledb_id: job.db,
    format: job.format,
    compression: job.compression,
    path: job.path,
    body_bytes: job.bytes,
    options: job.audience ? JSON.stringify(job.audience) : '',
    state: 'queued',
    received_at: job.receivedAt,
    updated_at: now,
    rows_read: 0,
    rows_rejected: 0,
    rounds: 0,
    checkpoint_line: 0,
    blocks: 0,
    audience_id: job.audience?.audience_id ?? 0,
    list_id: '',
    members_known: 0,
    members_unknown: 0,
    error: '',
    // The edge's row is version 0: a repeated import's row never hides the processor's state.
    version: 0,
  }
}

const NUMERIC: (keyof ImportRow)[] = [
  'org_id',
  'profiledb_id',
  'body_bytes',
  'received_at',
  'updated_at',
  'rows_read',
  'rows_rejected',
  'rounds',
  'checkpoint_line',
  'blocks',
  'audience_id',
  'members_known',
  'members_unknown',
  'version',
]

export async function readImport(store: Store, id: string): Promise<ImportRow | undefined> {
  const rows = await store.query<Record<string, unknown>>(
    `SELECT * EXCEPT (received_at, updated_at), toUnixTimestamp64Milli(received_at) AS received_at,
            toUnixTimestamp64Milli(updated_at) AS updated_at
     FROM imports FINAL WHERE import_id = {id:String}`,
    { id },
  )
  const row = rows[0]
  if (!row) return undefined
  for (const key of NUMERIC) row[key] = Number(row[key])
  return row as unknown as ImportRow
}

/** A new state of an import; its version orders it after every earlier one. */
export async function writeImport(store: Store, row: ImportRow, now: number): Promise<ImportRow> {
  const next = { ...row, updated_at: now, version: Math.max(now, row.version + 1) }
  await store.insert('imports', [next])
  return next
}

/** Rejected rows to keep: the first IMPORT_LIMITS.keptRejectedRows of the import, by line. */
export async function keepRejected(store: Store, importId: string, rows: RejectedRow[]): Promise<void> {
  if (rows.length === 0) return
  await store.insert(
    'import_rejected_rows',
    rows.map((r) => ({
      import_id: importId,
      line: r.line,
      identifier: r.customer_id ?? r.member ?? '',
      reason: r.reason,
    })),
  )
}

export interface ImportReceipt {
  import_id: string
  kind: ImportKind
  state: ImportState
  received_at: string
  format: ImportFormat
  compression: ImportCompression
  body_bytes: number
  rows_read: number
  rows_applied: number
  rows_ignored: number
  rows_rejected: number
  rejected_rows: RejectedRow[]
  error?: string
  app_id?: string
  audience_id?: number
  members_known?: number
  members_unknown?: number
}

/**
 * The receipt of an import, or undefined for an id unknown to this org. A profile import is done
 * once every block it handed to the profile writer is applied (import_blocks).
 */
export async function readReceipt(
  store: Store,
  orgId: number,
  id: string,
): Promise<ImportReceipt | undefined> {
  const row = await readImport(store, id)
  if (!row || row.org_id !== orgId) return undefined
  let applied = 0
  let ignored = 0
  let state = row.state
  if (row.kind === 'profiles' && (state === 'processing' || state === 'read')) {
    const [sums] = await store.query<{ blocks: string; applied: string; ignored: string }>(
      `SELECT count() AS blocks, sum(applied) AS applied, sum(ignored) AS ignored
       FROM import_blocks FINAL WHERE import_id = {id:String}`,
      { id },
    )
    applied = Number(sums?.applied ?? 0)
    ignored = Number(sums?.ignored ?? 0)
    if (state === 'read' && Number(sums?.blocks ?? 0) >= row.blocks) state = 'done'
  } else if (row.kind === 'profiles' && state === 'done') {
    // No block was handed on (every row rejected).
  } else if (row.kind === 'audience') {
    applied = state === 'done' ? row.rows_read - row.rows_rejected : 0
  }
  const rejected =
    row.rows_rejected > 0
      ? await store.query<{ line: string; identifier: string; reason: string }>(
          `SELECT line, identifier, reason FROM import_rejected_rows FINAL
           WHERE import_id = {id:String} ORDER BY line LIMIT {n:UInt32}`,
          { id, n: IMPORT_LIMITS.keptRejectedRows },
        )
      : []
  const key = row.kind === 'profiles' ? 'customer_id' : 'member'
  return {
    import_id: row.import_id,
    kind: row.kind,
    state,
    received_at: new Date(row.received_at).toISOString(),
    format: row.format,
    compression: row.compression,
    body_bytes: row.body_bytes,
    rows_read: row.rows_read,
    rows_applied: applied,
    rows_ignored: ignored,
    rows_rejected: row.rows_rejected,
    rejected_rows: rejected.map((r) => ({
      line: Number(r.line),
      ...(r.identifier !== '' && { [key]: r.identifier }),
      reason: r.reason,
    })),
    ...(row.error !== '' && { error: row.error }),
    ...(row.app_id !== '' && { app_id: row.app_id }),
    ...(row.kind === 'audience' && {
      audience_id: row.audience_id,
      members_known: row.members_known,
      members_unknown: row.members_unknown,
    }),
  }
}
