import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import type { ControlWrites } from './control-state.ts'
import type { ControlCommand, ControlResult } from './commands.ts'

/**
 * `control_results` (migration 010): each command's journal and answer. A command is journaled
 * (applied = 0, with the rows it will write) before its rows are written, and marked applied
 * (applied = 1) after; see the migration for why.
 */

export interface RecordedResult extends ControlResult {
  applied: boolean
  /** The journaled rows while not applied; undefined once applied. */
  writes: ControlWrites | undefined
}

export interface JournalEntry {
  command: ControlCommand
  result: ControlResult
  writes: ControlWrites
}

interface ResultRow {
  command_id: string
  applied: number | string
  status: number | string
  body: string
  writes: string
}

/** What is recorded for these command ids (the latest row of each: applied wins). */
export async function readResults(
  store: Store,
  ids: readonly string[],
): Promise<Map<string, RecordedResult>> {
  if (ids.length === 0) return new Map()
  const set = stringSet('ids', [...new Set(ids)])
  const rows = await store.query<ResultRow>(
    `SELECT command_id, applied, status, body, writes FROM control_results FINAL WHERE command_id IN ${set.sql}`,
    { ids: set.value },
  )
  return new Map(
    rows.map((r) => {
      const applied = Number(r.applied) === 1
      return [
        r.command_id,
        {
          applied,
          status: Number(r.status),
          body: JSON.parse(r.body) as unknown,
          writes: applied || r.writes === '' ? undefined : (JSON.parse(r.writes) as ControlWrites),
        },
      ]
    }),
  )
}

/** The answers of these commands that are applied (what an edge waits for). No FINAL: an applied row is final. */
export async function readApplied(store: Store, ids: readonly string[]): Promise<Map<string, ControlResult>> {
  if (ids.length === 0) return new Map()
  const set = stringSet('ids', [...ids])
  const rows = await store.query<Pick<ResultRow, 'command_id' | 'status' | 'body'>>(
    `SELECT command_id, any(status) AS status, any(body) AS body FROM control_results
     WHERE command_id IN ${set.sql} AND applied = 1 GROUP BY command_id`,
    { ids: set.value },
  )
  return new Map(
    rows.map((r) => [r.command_id, { status: Number(r.status), body: JSON.parse(r.body) as unknown }]),
  )
}

/** One insert for the whole batch: the journal (applied = false) or the applied marks. */
export async function writeResults(
  store: Store,
  entries: readonly JournalEntry[],
  applied: boolean,
  now: number,
): Promise<void> {
  if (entries.length === 0) return
  await store.insert(
    'control_results',
    entries.map((e) => ({
      command_id: e.command.id,
      kind: e.command.kind,
      status: e.result.status,
      body: JSON.stringify(e.result.body ?? null),
      // Kept only until applied: afterwards nobody needs the rows again.
      writes: applied ? '' : JSON.stringify(e.writes),
      applied: applied ? 1 : 0,
      taken_at: e.command.at,
      applied_at: now,
    })),
  )
}

export interface JobRun {
  job: string
  period_start: string
  ran_at: string
  /** 200 when the run succeeded, 500 when it threw (`error` says why). */
  status: number
  output: unknown
  error?: string
}

/** The latest applied run of each scheduled job: what the admin API shows as "last ran at". */
export async function latestJobRuns(store: Store): Promise<JobRun[]> {
  // Aliases differ from column names: an alias named like a column would shadow it in WHERE.
  const rows = await store.query<{
    job_name: string
    period: string | number
    ran: string | number
    last_status: number
    last_body: string
  }>(
    `SELECT JSONExtractString(body, 'job') AS job_name,
            argMax(JSONExtractUInt(body, 'period_start'), applied_at) AS period,
            toUnixTimestamp64Milli(max(applied_at)) AS ran,
            argMax(status, applied_at) AS last_status,
            argMax(body, applied_at) AS last_body
     FROM control_results
     WHERE kind = 'run-job' AND applied = 1 AND status != 404
     GROUP BY job_name ORDER BY job_name`,
  )
  return rows.map((r) => {
    const body = JSON.parse(r.last_body) as { output?: unknown; error?: string }
    return {
      job: r.job_name,
      period_start: new Date(Number(r.period)).toISOString(),
      ran_at: new Date(Number(r.ran)).toISOString(),
      status: Number(r.last_status),
      output: body.output ?? null,
      ...(body.error !== undefined && { error: body.error }),
    }
  })
}
