import type { CommandEnvelope, CommandOf, ControlResult } from '../control/control-area.ts'
import { isJobTypeOf, type ExportPlan, type SourceType } from './export-kinds.ts'
import { exportPayloads } from './export-payloads.ts'

/**
 * The control applier's rules for exports (pure; apply-command.ts calls them). One job per
 * (org, source, job type): enabling it again keeps its id and starts it afresh. Ids are max + 1
 * over every job ever written. Audience and profile exports count against the org's caps by
 * source: an audience (or profile db) with any enabled job is one export, whatever job types.
 */

/** A row of `export_jobs` (migration 015); times in ms. */
export interface ExportJobRow {
  id: number
  org_id: number
  source_type: SourceType
  source_id: string
  job_type: string
  name: string
  app_id: string
  enabled: 0 | 1
  enabled_at: number
  disabled_at: number | null
  created_at: number
  version: number
}

export interface ExportPlanRow {
  org_id: number
  plan: ExportPlan
  version: number
}

/** What the applier knows of exports before a batch: only what the commands name. */
export interface ExportControlState {
  /** Highest export job id ever allocated (0 when none). */
  maxId: number
  /** Of the orgs the commands name, those that exist. */
  orgs: ReadonlySet<number>
  /** Every job of the orgs the commands name. */
  jobs: ReadonlyMap<number, ExportJobRow>
  plans: ReadonlyMap<number, ExportPlanRow>
  /** Of the profile dbs the commands name, their org and app ('' for an org's own db). */
  profileDbs: ReadonlyMap<number, { org_id: number; app_id: string }>
  /** Of the app ids the commands name, their org (live apps only). */
  apps: ReadonlyMap<string, { org_id: number; name: string }>
  /** Of the audiences the commands name, those not deleted. */
  audiences: ReadonlyMap<number, { org_id: number; app_id: string; name: string }>
}

export interface MutableExportState extends ExportControlState {
  maxId: number
  jobs: Map<number, ExportJobRow>
  plans: Map<number, ExportPlanRow>
}

export interface ExportWrites {
  export_jobs: ExportJobRow[]
  export_plans: ExportPlanRow[]
}

export interface ExportStateNeeds {
  orgIds: number[]
  profileDbIds: number[]
  appIds: string[]
  audienceIds: number[]
}

export type ExportCommand = CommandOf<typeof exportPayloads>

export const isExportCommand = (command: CommandEnvelope): command is ExportCommand =>
  Object.hasOwn(exportPayloads, command.kind)

export function exportStateNeeds(commands: readonly CommandEnvelope[]): ExportStateNeeds {
  const orgIds = new Set<number>()
  const profileDbIds = new Set<number>()
  const appIds = new Set<string>()
  const audienceIds = new Set<number>()
  for (const c of commands) {
    if (!isExportCommand(c)) continue
    orgIds.add(c.payload.org_id)
    if (c.kind !== 'enable-export') continue
    const id = decimalId(c.payload.source_id)
    if (c.payload.source_type === 'profiles' && id !== undefined) profileDbIds.add(id)
    if (c.payload.source_type === 'audiences' && id !== undefined) audienceIds.add(id)
    if (c.payload.source_type === 'logs') appIds.add(c.payload.source_id)
  }
  return {
    orgIds: [...orgIds],
    profileDbIds: [...profileDbIds],
    appIds: [...appIds],
    audienceIds: [...audienceIds],
  }
}

export const copyExportState = (state: ExportControlState): MutableExportState => ({
  ...state,
  jobs: new Map(state.jobs),
  plans: new Map(state.plans),
})

export const emptyExportState = (): ExportControlState => ({
  maxId: 0,
  orgs: new Set(),
  jobs: new Map(),
  plans: new Map(),
  profileDbs: new Map(),
  apps: new Map(),
  audiences: new Map(),
})

const refused = (status: number, error: string): ControlResult => ({ status, body: { error } })
const nextVersion = (at: number, previous: number) => Math.max(at, previous + 1)

const decimalId = (text: string): number | undefined =>
  /^[1-9][0-9]{0,15}$/.test(text) ? Number(text) : undefined

/** An export job as the admin API shows it (times as ms; the edge adds its state). */
export type ExportJobRecord = ExportJobRow

export function applyExportCommand(
  state: MutableExportState,
  command: ExportCommand,
  writes: ExportWrites,
): ControlResult {
  const { at } = command
  const { org_id } = command.payload
  if (!state.orgs.has(org_id)) return refused(404, `org ${org_id} not found`)
  const write = (row: ExportJobRow) => {
    writes.export_jobs.push(row)
    state.jobs.set(row.id, row)
  }
  switch (command.kind) {
    case 'set-export-plan': {
      const previous = state.plans.get(org_id)
      const row: ExportPlanRow = {
        org_id,
        plan: command.payload.plan,
        version: nextVersion(at, previous?.version ?? 0),
      }
      writes.export_plans.push(row)
      state.plans.set(org_id, row)
      return { status: 200, body: { org_id, plan: row.plan } }
    }
    case 'disable-export': {
      const job = state.jobs.get(command.payload.export_id)
      if (!job || job.org_id !== org_id) return refused(404, `export ${command.payload.export_id} not found`)
      if (job.enabled === 1)
        write({ ...job, enabled: 0, disabled_at: at, version: nextVersion(at, job.version) })
      return { status: 204, body: null }
    }
    case 'enable-export':
      return enable(state, command.payload, at, write)
  }
}

type EnablePayload = Extract<ExportCommand, { kind: 'enable-export' }>['payload']

function enable(
  state: MutableExportState,
  payload: EnablePayload,
  at: number,
  write: (row: ExportJobRow) => void,
): ControlResult {
  const { org_id, source_type, source_id } = payload
  const source = findSource(state, payload)
  if (!source) return refused(404, `${sourceLabel(source_type)} ${source_id} not found in org ${org_id}`)
  const jobTypes = [...new Set(payload.job_types)]
  const unknown = jobTypes.find((t) => !isJobTypeOf(source_type, t))
  if (unknown !== undefined) return refused(422, `job type ${unknown} is not one of ${source_type}`)

  const jobsOfOrg = [...state.jobs.values()].filter((j) => j.org_id === org_id)
  if (source_type !== 'logs') {
    const cap = capOf(state, payload)
    const counted = new Set(
      jobsOfOrg.filter((j) => j.enabled === 1 && j.source_type === source_type).map((j) => j.source_id),
    )
    if (!counted.has(source_id) && counted.size >= cap)
      return refused(
        409,
        `org ${org_id} has ${counted.size} ${source_type} exports enabled, the most its plan allows (${cap}); disable one first`,
      )
  }

  const enabled: ExportJobRow[] = []
  for (const job_type of jobTypes) {
    const existing = jobsOfOrg.find(
      (j) => j.source_type === source_type && j.source_id === source_id && j.job_type === job_type,
    )
    const row: ExportJobRow = existing
      ? {
          ...existing,
          name: payload.name ?? existing.name,
          enabled: 1,
          enabled_at: at,
          disabled_at: null,
          version: nextVersion(at, existing.version),
        }
      : {
          id: ++state.maxId,
          org_id,
          source_type,
          source_id,
          job_type,
          name: payload.name ?? source.name,
          app_id: source.app_id,
          enabled: 1,
          enabled_at: at,
          disabled_at: null,
          created_at: at,
          version: at,
        }
    write(row)
    enabled.push(row)
  }
  return { status: 201, body: enabled }
}

function findSource(
  state: ExportControlState,
  payload: EnablePayload,
): { app_id: string; name: string } | undefined {
  const { org_id, source_type, source_id } = payload
  if (source_type === 'logs') {
    const app = state.apps.get(source_id)
    return app && app.org_id === org_id ? { app_id: source_id, name: `raw log of ${app.name}` } : undefined
  }
  const id = decimalId(source_id)
  if (id === undefined) return undefined
  if (source_type === 'profiles') {
    const db = state.profileDbs.get(id)
    if (!db || db.org_id !== org_id) return undefined
    return {
      app_id: db.app_id,
      name: db.app_id === '' ? `profiles of org ${org_id}` : `profiles of app ${db.app_id}`,
    }
  }
  const audience = state.audiences.get(id)
  return audience && audience.org_id === org_id ? { app_id: audience.app_id, name: audience.name } : undefined
}

function capOf(state: ExportControlState, payload: EnablePayload): number {
  if (payload.source_type === 'profiles') return payload.caps.profiles
  return state.plans.get(payload.org_id)?.plan === 'remarketing'
    ? payload.caps.audiences_remarketing
    : payload.caps.audiences
}

const sourceLabel = (type: SourceType) =>
  type === 'audiences' ? 'audience' : type === 'profiles' ? 'profile db' : 'app'
