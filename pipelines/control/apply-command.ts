import type { Scope } from '../../schemas/admin.ts'
import type { ControlCommand, ControlResult } from './commands.ts'
import {
  applyAudienceCommand,
  audienceIdsNamed,
  copyAudienceState,
  type AudienceRow,
  type AudienceState,
  type MutableAudienceState,
} from '../audiences/audience-commands.ts'
import {
  applyCampaignCommand,
  campaignNeeds,
  copyCampaignState,
  emptyCampaignState,
  type CampaignNeeds,
  type CampaignRow,
  type CampaignState,
} from '../campaigns/campaign-commands.ts'
import {
  applyPushTransportCommand,
  pushTransportApps,
  type PushTransportAppState,
  type PushTransportRow,
} from './push-transports.ts'
import {
  appSettingsApps,
  applyAppSettingsCommand,
  type AppSettingsRow,
  type AppSettingsState,
} from './app-settings.ts'
import {
  applyExportCommand,
  copyExportState,
  emptyExportState,
  exportStateNeeds,
  type ExportControlState,
  type ExportJobRow,
  type ExportPlanRow,
  type ExportStateNeeds,
  type MutableExportState,
} from '../exports/export-commands.ts'

/**
 * The control applier's pure core: the state it read + commands in topic order → the rows to write
 * and each command's answer. No I/O and no clock: times come from the commands, so applying the
 * same commands to the same state always gives the same rows (a replay writes identical rows).
 */

/** Rows as the control tables store them (times in ms since epoch). */
export interface OrgRow {
  id: number
  name: string
  profiledb_id: number
  created_at: number
  version: number
}

export interface AppRow {
  app_id: string
  org_id: number
  name: string
  profiledb_id: number
  created_at: number
  deleted: 0 | 1
  version: number
}

export interface KeyRow {
  api_key: string
  org_id: number
  secret_hash: string
  scopes: Scope[]
  created_at: number
  revoked: 0 | 1
  revoked_at: number | null
  version: number
}

export interface ProfileDbRow {
  id: number
  org_id: number
  /** Empty for an org's own profile db. */
  app_id: string
  created_at: number
}

/** Rows to write, per table. */
export interface ControlWrites {
  profile_dbs: ProfileDbRow[]
  orgs: OrgRow[]
  apps: AppRow[]
  api_keys: KeyRow[]
  audiences: AudienceRow[]
  campaigns: CampaignRow[]
  push_transports: PushTransportRow[]
  app_settings: AppSettingsRow[]
  export_jobs: ExportJobRow[]
  export_plans: ExportPlanRow[]
}

export const CONTROL_TABLES = [
  'profile_dbs',
  'orgs',
  'apps',
  'api_keys',
  'audiences',
  'campaigns',
  'push_transports',
  'app_settings',
  'export_jobs',
  'export_plans',
] as const satisfies readonly (keyof ControlWrites)[]

export const noWrites = (): ControlWrites => ({
  profile_dbs: [],
  orgs: [],
  apps: [],
  api_keys: [],
  audiences: [],
  campaigns: [],
  push_transports: [],
  app_settings: [],
  export_jobs: [],
  export_plans: [],
})

/** What the applier knows before a batch: only what its commands name, plus the sequences. */
export interface ControlState {
  /** Highest id in use per sequence (0 when none). */
  maxIds: { orgs: number; profile_dbs: number }
  /** Of the orgs the commands name, those that exist. */
  orgs: ReadonlySet<number>
  /** Of the app ids the commands name, their current rows (deleted ones included). */
  apps: ReadonlyMap<string, Pick<AppRow, 'deleted' | 'version'>>
  /** Of the API keys the commands name, their current rows. */
  keys: ReadonlyMap<string, KeyRow>
  audiences: AudienceState
  /** Campaign sequences and the campaigns the commands name (campaign-commands.ts); absent: none. */
  campaigns?: CampaignState
  /** Of the apps push-transport commands name, their org and transport rows; absent: none. */
  pushTransports?: ReadonlyMap<string, PushTransportAppState>
  /** Of the apps set-app-settings commands name, their org and settings row; absent: none. */
  appSettings?: ReadonlyMap<string, AppSettingsState>
  /** Export jobs and plans of the orgs the commands name (export-commands.ts); absent: none. */
  exports?: ExportControlState
}

/** What to read before applying these commands. */
export interface StateNeeds {
  orgIds: number[]
  appIds: string[]
  apiKeys: string[]
  audienceIds: number[]
  campaigns: CampaignNeeds
  pushTransportApps: string[]
  appSettingsApps: string[]
  exports: ExportStateNeeds
}

export function stateNeeds(commands: readonly ControlCommand[]): StateNeeds {
  const orgIds = new Set<number>()
  const appIds = new Set<string>()
  const apiKeys = new Set<string>()
  for (const c of commands) {
    if (c.kind === 'create-app') {
      orgIds.add(c.payload.org_id)
      appIds.add(c.payload.app_id)
    } else if (c.kind === 'create-key' || c.kind === 'revoke-key') {
      orgIds.add(c.payload.org_id)
      apiKeys.add(c.payload.api_key)
    }
  }
  return {
    orgIds: [...orgIds],
    appIds: [...appIds],
    apiKeys: [...apiKeys],
    audienceIds: audienceIdsNamed(commands),
    campaigns: campaignNeeds(commands),
    pushTransportApps: pushTransportApps(commands),
    appSettingsApps: appSettingsApps(commands),
    exports: exportStateNeeds(commands),
  }
}

export interface Applied {
  command: ControlCommand
  result: ControlResult
  writes: ControlWrites
  /** A due job to run once its command is journaled (run-job commands of a known job). */
  job?: { name: string; periodStart: number }
}

/**
 * Apply commands in order. A command id seen earlier in the list is skipped (the first one's
 * answer stands): two schedulers, or a producer's retry, put the same command on the topic twice.
 */
export function applyCommands(
  state: ControlState,
  commands: readonly ControlCommand[],
  jobs: ReadonlySet<string>,
): { applied: Applied[]; state: ControlState } {
  const s = {
    maxIds: { ...state.maxIds },
    orgs: new Set(state.orgs),
    apps: new Map(state.apps),
    keys: new Map(state.keys),
    audiences: copyAudienceState(state.audiences),
    campaigns: copyCampaignState(state.campaigns ?? emptyCampaignState()),
    pushTransports: new Map(state.pushTransports ?? []),
    appSettings: new Map(state.appSettings ?? []),
    exports: copyExportState(state.exports ?? emptyExportState()),
  }
  const seen = new Set<string>()
  const applied: Applied[] = []
  for (const command of commands) {
    if (seen.has(command.id)) continue
    seen.add(command.id)
    applied.push(applyOne(s, command, jobs))
  }
  return { applied, state: s }
}

interface MutableState {
  maxIds: { orgs: number; profile_dbs: number }
  orgs: Set<number>
  apps: Map<string, Pick<AppRow, 'deleted' | 'version'>>
  keys: Map<string, KeyRow>
  audiences: MutableAudienceState
  campaigns: CampaignState
  pushTransports: Map<string, PushTransportAppState>
  appSettings: Map<string, AppSettingsState>
  exports: MutableExportState
}

const refused = (status: number, error: string): ControlResult => ({ status, body: { error } })

/** A version above the record's previous one even when the taking edge's clock lags the last writer's. */
const nextVersion = (at: number, previous: number | undefined) => Math.max(at, (previous ?? 0) + 1)

function applyOne(s: MutableState, command: ControlCommand, jobs: ReadonlySet<string>): Applied {
  const writes = noWrites()
  const done = (result: ControlResult, job?: Applied['job']): Applied =>
    job ? { command, result, writes, job } : { command, result, writes }
  const { at } = command
  switch (command.kind) {
    case 'create-org': {
      const id = ++s.maxIds.orgs
      const profiledb_id = ++s.maxIds.profile_dbs
      const { name } = command.payload
      writes.profile_dbs.push({ id: profiledb_id, org_id: id, app_id: '', created_at: at })
      writes.orgs.push({ id, name, profiledb_id, created_at: at, version: at })
      s.orgs.add(id)
      return done({ status: 201, body: { id, name, profiledb_id } })
    }
    case 'create-app': {
      const { org_id, name, app_id } = command.payload
      if (!s.orgs.has(org_id)) return done(refused(404, `org ${org_id} not found`))
      const previous = s.apps.get(app_id)
      if (previous && previous.deleted === 0) return done(refused(409, `app_id ${app_id} already exists`))
      const profiledb_id = ++s.maxIds.profile_dbs
      const version = nextVersion(at, previous?.version)
      writes.profile_dbs.push({ id: profiledb_id, org_id, app_id, created_at: at })
      writes.apps.push({ app_id, org_id, name, profiledb_id, created_at: at, deleted: 0, version })
      s.apps.set(app_id, { deleted: 0, version })
      return done({ status: 201, body: { app_id, org_id, name, profiledb_id } })
    }
    case 'create-key': {
      const { org_id, api_key, secret_hash } = command.payload
      if (!s.orgs.has(org_id)) return done(refused(404, `org ${org_id} not found`))
      // The edge draws 96 random bits: a collision is a bug or a replayed payload, never a reuse.
      if (s.keys.has(api_key)) return done(refused(409, 'api key already exists'))
      const scopes = [...new Set(command.payload.scopes)]
      const row: KeyRow = {
        api_key,
        org_id,
        secret_hash,
        scopes,
        created_at: at,
        revoked: 0,
        revoked_at: null,
        version: at,
      }
      writes.api_keys.push(row)
      s.keys.set(api_key, row)
      return done({ status: 201, body: { api_key, scopes } })
    }
    case 'revoke-key': {
      const { org_id, api_key } = command.payload
      const existing = s.keys.get(api_key)
      if (!existing || existing.org_id !== org_id || existing.revoked === 1)
        return done(refused(404, 'api key not found'))
      const row: KeyRow = {
        ...existing,
        revoked: 1,
        revoked_at: at,
        version: nextVersion(at, existing.version),
      }
      writes.api_keys.push(row)
      s.keys.set(api_key, row)
      return done({ status: 204, body: null })
    }
    case 'set-push-transport':
    case 'remove-push-transport':
      return done(applyPushTransportCommand(s.pushTransports, command, writes))
    case 'set-app-settings':
      return done(applyAppSettingsCommand(s.appSettings, command, writes))
    case 'run-job': {
      const { job, period_start } = command.payload
      if (!jobs.has(job)) return done(refused(404, `unknown job ${job}`))
      return done({ status: 200, body: { job, period_start } }, { name: job, periodStart: period_start })
    }
    case 'create-audience':
    case 'update-audience':
    case 'delete-audience':
      return done(applyAudienceCommand(s.audiences, command, writes.audiences))
    case 'create-campaign':
    case 'update-campaign':
    case 'archive-campaign':
    case 'delete-campaign':
      return done(applyCampaignCommand(s.campaigns, command, writes.campaigns))
    case 'enable-export':
    case 'disable-export':
    case 'set-export-plan':
      return done(applyExportCommand(s.exports, command, writes))
  }
}
