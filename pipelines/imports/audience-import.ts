import type { Readable } from 'node:stream'
import { parseTargetRules } from '../../schemas/audiences.ts'
import { IMPORT_LIMITS, type MemberIdType, type RejectedRow } from '../../schemas/imports.ts'
import { readLiveAudience } from '../audiences/audience-reader.ts'
import type { Store } from '../connectors/store/store.ts'
import { jsonMember, memberHeader, normaliseMember, type MemberResult } from './audience-members.ts'
import { keepRejected, newImportRow, readImport, writeImport, type ImportJob } from './import-jobs.ts'
import { ImportRefused, isBodyError } from './profile-import.ts'
import { readRows } from './read-rows.ts'

export interface AudienceImportDeps {
  store: Store
  open: (path: string) => Readable
  now: () => number
  /** Sets a static audience's member lists (a control command); answers the audience's version. */
  setLists: (job: ImportJob, audienceId: number, lists: string[]) => Promise<{ version: number }>
  /** Has the audience counted again (the audience counter's request). */
  requestCount: (job: ImportJob, audienceId: number) => Promise<void>
  /** Members per insert; default 100,000. */
  chunk?: number
}

/**
 * The import processor's work on one audience import: the members of the body go to a member list
 * of their own (audience_list_members, list id = import id), written whole before the audience
 * names it, so a reader of the audience sees the old members or the new ones, never part of a
 * list. Then the audience's rules name the list (replace: only it; add: it too), the members the
 * app does not know are counted, and the audience is counted again. Members go in by natural key
 * (app, list, kind, identifier), so a redelivered job writes the same rows again and changes nothing.
 */
export async function runAudienceImport(job: ImportJob, deps: AudienceImportDeps): Promise<void> {
  const options = job.audience!
  let row = (await readImport(deps.store, job.id)) ?? newImportRow(job, deps.now())
  if (row.state === 'done' || row.state === 'failed') return
  row = await writeImport(deps.store, { ...row, state: 'processing', list_id: job.id }, deps.now())
  const chunk = deps.chunk ?? 100_000
  let type: MemberIdType | undefined = options.id_type ?? undefined
  let members: string[] = []
  const rejected: RejectedRow[] = []
  let rowsRead = 0
  let rowsRejected = 0
  let first = true
  const flush = async () => {
    if (members.length === 0) return
    const idType = type!
    await deps.store.insert(
      'audience_list_members',
      members.map((identifier) => ({ app_id: job.app, list_id: job.id, id_type: idType, identifier })),
    )
    members = []
  }
  try {
    for await (const source of readRows(deps.open(job.path), job.format, job.compression)) {
      if (first && source.kind === 'cells') {
        first = false
        const named = memberHeader(source.cells)
        if (named) {
          if (type !== undefined && named !== type)
            throw new ImportRefused(`the header names ${named}; the request said ${type}`)
          type = named
          continue
        }
        if (type === undefined)
          throw new ImportRefused('a CSV needs a header naming its column: customer_id, email or install_id')
      }
      first = false
      rowsRead++
      let result: MemberResult
      if (source.kind === 'bad') result = { ok: false, reason: source.reason }
      else if (source.kind === 'text') {
        const parsed = jsonMember(source.text, type)
        if (parsed.ok && type === undefined) type = parsed.type
        result = parsed
      } else if (source.cells.length !== 1)
        result = { ok: false, reason: `one column expected, the row has ${source.cells.length}` }
      else result = normaliseMember(type!, source.cells[0])
      if (!result.ok) {
        rowsRejected++
        if (rowsRejected <= IMPORT_LIMITS.keptRejectedRows)
          rejected.push({
            line: source.line,
            ...(result.member !== undefined && { member: result.member }),
            reason: result.reason,
          })
        continue
      }
      members.push(result.member)
      if (members.length >= chunk) await flush()
    }
    await flush()
  } catch (err) {
    if (!(err instanceof ImportRefused) && !isBodyError(err)) throw err
    await keepRejected(deps.store, job.id, rejected)
    await writeImport(deps.store, { ...row, state: 'failed', error: (err as Error).message }, deps.now())
    return
  }
  await keepRejected(deps.store, job.id, rejected)

  const audience = await readLiveAudience(deps.store, job.org, job.app, options.audience_id)
  if (!audience) {
    await writeImport(
      deps.store,
      {
        ...row,
        state: 'failed',
        rows_read: rowsRead,
        rows_rejected: rowsRejected,
        error: `audience ${options.audience_id} no longer exists`,
      },
      deps.now(),
    )
    return
  }
  const parsed = parseTargetRules(JSON.parse(audience.target_rules))
  const before = parsed.ok ? (parsed.rules.static?.lists ?? []) : []
  const lists = options.mode === 'add' ? [...before.filter((l) => l !== job.id), job.id] : [job.id]
  const counts = type ? await memberCounts(deps.store, job, type) : { known: 0, unknown: 0 }
  await deps.setLists(job, options.audience_id, lists)
  await deps.requestCount(job, options.audience_id)
  await writeImport(
    deps.store,
    {
      ...row,
      state: 'done',
      rows_read: rowsRead,
      rows_rejected: rowsRejected,
      members_known: counts.known,
      members_unknown: counts.unknown,
    },
    deps.now(),
  )
}

/** Distinct members of the list the app knows (has an install of) and does not. */
async function memberCounts(store: Store, job: ImportJob, type: MemberIdType) {
  const known =
    type === 'install_id'
      ? `identifier IN (SELECT install_uuid FROM devices FINAL WHERE app_id = {app:String})`
      : type === 'customer_id'
        ? `identifier IN (SELECT customer_id FROM devices FINAL WHERE app_id = {app:String} AND customer_id != '')`
        : `identifier IN (SELECT email FROM profiles FINAL WHERE profiledb_id = {db:UInt64} AND deleted = 0
             AND email != '' AND customer_id IN
               (SELECT customer_id FROM devices FINAL WHERE app_id = {app:String} AND customer_id != ''))`
  const [row] = await store.query<{ known: string; total: string }>(
    `SELECT countIf(${known}) AS known, count() AS total FROM audience_list_members FINAL
     WHERE app_id = {app:String} AND list_id = {list:String}`,
    { app: job.app, list: job.id, db: job.db },
  )
  const total = Number(row?.total ?? 0)
  const k = Number(row?.known ?? 0)
  return { known: k, unknown: total - k }
}
