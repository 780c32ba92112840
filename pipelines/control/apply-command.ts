import type { Scope } from '../../schemas/admin.ts'
import { corePayloads, type ControlCommand, type ControlResult, type CoreCommand } from './commands.ts'
import type {
  AnyControlArea,
  CommandEnvelope,
  CommandOf,
  ControlArea,
  PayloadSchemas,
} from './control-area.ts'

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

/** The control plane's own tables. */
export const CORE_TABLES = ['profile_dbs', 'orgs', 'apps', 'api_keys'] as const

/** Rows of the control plane's own tables. */
export type CoreWrites = {
  profile_dbs: ProfileDbRow[]
  orgs: OrgRow[]
  apps: AppRow[]
  api_keys: KeyRow[]
}

/** What the applier knows of orgs, apps and keys before a batch: only what its commands name, plus the sequences. */
export type CoreState = {
  /** Highest id in use per sequence (0 when none). */
  maxIds: { orgs: number; profile_dbs: number }
  /** Of the orgs the commands name, those that exist. */
  orgs: ReadonlySet<number>
  /** Of the app ids the commands name, their current rows (deleted ones included). */
  apps: ReadonlyMap<string, Pick<AppRow, 'deleted' | 'version'>>
  /** Of the API keys the commands name, their current rows. */
  keys: ReadonlyMap<string, KeyRow>
}

/** What to read of orgs, apps and keys before applying a batch. */
export type CoreNeeds = {
  orgIds: number[]
  appIds: string[]
  apiKeys: string[]
}

// The types of a list of areas, each keyed by the area's name (its rows by table).
type Areas = readonly AnyControlArea[]
/* eslint-disable @typescript-eslint/no-explicit-any -- inferring an area's type parameters */
type PayloadsOf<X> = X extends ControlArea<any, infer P, any, any, any, any> ? P : never
type StateOf<X> = X extends ControlArea<any, any, infer S, any, any, any> ? S : never
type NeedsOf<X> = X extends ControlArea<any, any, any, infer N, any, any> ? N : never
type RowsOf<X> = X extends ControlArea<any, any, any, any, infer R, any> ? R : never
type WorkingOf<X> = X extends ControlArea<any, any, any, any, any, infer W> ? W : never
/* eslint-enable @typescript-eslint/no-explicit-any */
type UnionToIntersection<U> = (U extends unknown ? (u: U) => void : never) extends (i: infer I) => void
  ? I
  : never
type AllRows<A extends Areas> = UnionToIntersection<RowsOf<A[number]>>

/** A command of the control plane or of one of these areas. */
export type CommandIn<A extends Areas> =
  | CoreCommand
  | (A[number] extends infer X ? (X extends AnyControlArea ? CommandOf<PayloadsOf<X>> : never) : never)
/** Rows to write, per table: the control plane's and the areas'. */
export type WritesIn<A extends Areas> = CoreWrites & { [T in keyof AllRows<A>]: AllRows<A>[T][] }
/** The state read before a batch; an area's absent: none read (no rows). */
export type StateIn<A extends Areas> = CoreState & { [X in A[number] as X['name']]?: StateOf<X> }
/** The state as a batch leaves it. */
export type WorkingStateIn<A extends Areas> = CoreState & { [X in A[number] as X['name']]: WorkingOf<X> }
export type NeedsIn<A extends Areas> = CoreNeeds & { [X in A[number] as X['name']]: NeedsOf<X> }

export interface Applied<C = ControlCommand, W = Record<string, unknown[]>> {
  command: C
  result: ControlResult
  writes: W
  /** A due job to run once its command is journaled (run-job commands of a known job). */
  job?: { name: string; periodStart: number }
}

/**
 * The control plane over these areas: the kinds it decodes, what it reads before a batch, and
 * its pure core. Each area's state, needs and rows go under the area's name.
 */
export function controlPlane<const A extends Areas>(areas: A) {
  type Command = CommandIn<A>
  type Writes = WritesIn<A>
  const payloads: PayloadSchemas = Object.fromEntries([
    ...Object.entries(corePayloads),
    ...areas.flatMap((area) => Object.entries(area.payloads)),
  ])
  const areaOfKind = new Map<string, AnyControlArea>()
  for (const area of areas)
    for (const kind of Object.keys(area.payloads)) {
      if (Object.hasOwn(corePayloads, kind) || areaOfKind.has(kind))
        throw new Error(`control command kind ${kind} is registered twice`)
      areaOfKind.set(kind, area)
    }
  const tables: readonly string[] = [...CORE_TABLES, ...areas.flatMap((a) => a.tables)]

  const noWrites = (): Writes => Object.fromEntries(tables.map((t) => [t, []])) as unknown as Writes

  function stateNeeds(commands: readonly CommandEnvelope[]): NeedsIn<A> {
    const orgIds = new Set<number>()
    const appIds = new Set<string>()
    const apiKeys = new Set<string>()
    for (const c of commands as readonly Command[]) {
      if (c.kind === 'create-app') {
        orgIds.add(c.payload.org_id)
        appIds.add(c.payload.app_id)
      } else if (c.kind === 'create-key' || c.kind === 'revoke-key') {
        orgIds.add(c.payload.org_id)
        apiKeys.add(c.payload.api_key)
      }
    }
    const needs: Record<string, unknown> = { orgIds: [...orgIds], appIds: [...appIds], apiKeys: [...apiKeys] }
    for (const area of areas) needs[area.name] = area.needs(commands)
    return needs as NeedsIn<A>
  }

  /**
   * Apply commands in order. A command id seen earlier in the list is skipped (the first one's
   * answer stands): two schedulers, or a producer's retry, put the same command on the topic twice.
   */
  function applyCommands(
    state: StateIn<A>,
    commands: readonly CommandEnvelope[],
    jobs: ReadonlySet<string>,
  ): { applied: Applied<Command, Writes>[]; state: WorkingStateIn<A> } {
    const given = state as unknown as Record<string, unknown>
    const working: Record<string, unknown> = {
      maxIds: { ...state.maxIds },
      orgs: new Set(state.orgs),
      apps: new Map(state.apps),
      keys: new Map(state.keys),
    }
    for (const area of areas) working[area.name] = area.copy(given[area.name])
    const s = working as unknown as MutableCoreState & Record<string, unknown>
    const seen = new Set<string>()
    const applied: Applied<Command, Writes>[] = []
    for (const command of commands as readonly Command[]) {
      if (seen.has(command.id)) continue
      seen.add(command.id)
      const writes = noWrites()
      const area = areaOfKind.get(command.kind)
      if (area) {
        const result = area.apply(s[area.name], command, writes)
        applied.push({ command, result, writes })
      } else applied.push(applyCore(s, command, jobs, writes) as Applied<Command, Writes>)
    }
    return { applied, state: working as unknown as WorkingStateIn<A> }
  }

  return { areas, payloads, tables, noWrites, stateNeeds, applyCommands }
}

/** What the applier and the state reads use of a control plane, whatever its areas. */
export interface ControlPlane {
  readonly areas: Areas
  readonly payloads: PayloadSchemas
  readonly tables: readonly string[]
  noWrites(): Record<string, unknown[]>
  stateNeeds(commands: readonly CommandEnvelope[]): CoreNeeds & Record<string, unknown>
  applyCommands(
    state: CoreState & Record<string, unknown>,
    commands: readonly CommandEnvelope[],
    jobs: ReadonlySet<string>,
  ): { applied: Applied[] }
}

interface MutableCoreState {
  maxIds: { orgs: number; profile_dbs: number }
  orgs: Set<number>
  apps: Map<string, Pick<AppRow, 'deleted' | 'version'>>
  keys: Map<string, KeyRow>
}

const refused = (status: number, error: string): ControlResult => ({ status, body: { error } })

/** A version above the record's previous one even when the taking edge's clock lags the last writer's. */
const nextVersion = (at: number, previous: number | undefined) => Math.max(at, (previous ?? 0) + 1)

function applyCore(
  s: MutableCoreState,
  command: CoreCommand,
  jobs: ReadonlySet<string>,
  writes: CoreWrites,
): Applied<CoreCommand, CoreWrites> {
  const done = (result: ControlResult, job?: Applied['job']): Applied<CoreCommand, CoreWrites> =>
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
    case 'run-job': {
      const { job, period_start } = command.payload
      if (!jobs.has(job)) return done(refused(404, `unknown job ${job}`))
      return done({ status: 200, body: { job, period_start } }, { name: job, periodStart: period_start })
    }
  }
}
