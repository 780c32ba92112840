import type { CommandEnvelope, CommandOf, ControlResult } from '../control/control-area.ts'
import { audiencePayloads } from './audience-payloads.ts'

/**
 * The control applier's rules for audiences (pure, like apply-command.ts, which calls them): ids
 * are max + 1 over every audience ever created (deleted ones included, so an id is never reused);
 * an update or delete names an audience of its org and app that is not deleted, else 404.
 */

/** A row of `audiences` (migration 012); times in ms since the epoch, rules as JSON text. */
export interface AudienceRow {
  id: number
  org_id: number
  app_id: string
  name: string
  /** Canonical rules (JSON): what the API answers and the compiler reads. */
  target_rules: string
  /** The request's rules as given (JSON). */
  target_rules_given: string
  created_at: number
  updated_at: number
  deleted_at: number | null
  version: number
}

/** What the applier knows of audiences before a batch. */
export interface AudienceState {
  /** Highest audience id ever allocated (0 when none). */
  maxId: number
  /** Of the audiences the commands name, their current rows (deleted ones included). */
  rows: ReadonlyMap<number, AudienceRow>
}

export interface MutableAudienceState {
  maxId: number
  rows: Map<number, AudienceRow>
}

export type AudienceCommand = CommandOf<typeof audiencePayloads>

export const isAudienceCommand = (command: CommandEnvelope): command is AudienceCommand =>
  Object.hasOwn(audiencePayloads, command.kind)

/** The audience ids these commands name (to read their rows before applying them). */
export function audienceIdsNamed(commands: readonly CommandEnvelope[]): number[] {
  const ids = new Set<number>()
  for (const c of commands)
    if (isAudienceCommand(c) && (c.kind === 'update-audience' || c.kind === 'delete-audience'))
      ids.add(c.payload.audience_id)
  return [...ids]
}

export const copyAudienceState = (
  state: AudienceState = { maxId: 0, rows: new Map() },
): MutableAudienceState => ({
  maxId: state.maxId,
  rows: new Map(state.rows),
})

/**
 * The answer of a create or update: the record as stored, rules as objects (the edge shapes the
 * API's body from it). A delete answers 204 without a body.
 */
export interface AudienceRecord {
  id: number
  org_id: number
  app_id: string
  name: string
  /** Canonical (what is counted). */
  target_rules: unknown
  /** As the request gave them (what the API answers). */
  target_rules_given: unknown
  created_at: number
  updated_at: number
  version: number
}

const refused = (status: number, error: string): ControlResult => ({ status, body: { error } })

/** A version above the record's previous one even when the taking edge's clock lags the last writer's. */
const nextVersion = (at: number, previous: number) => Math.max(at, previous + 1)

export function toRecord(row: AudienceRow): AudienceRecord {
  return {
    id: row.id,
    org_id: row.org_id,
    app_id: row.app_id,
    name: row.name,
    target_rules: JSON.parse(row.target_rules) as unknown,
    target_rules_given: JSON.parse(row.target_rules_given) as unknown,
    created_at: row.created_at,
    updated_at: row.updated_at,
    version: row.version,
  }
}

/** Applies one audience command to `state`, adding the rows to write to `writes`. */
export function applyAudienceCommand(
  state: MutableAudienceState,
  command: AudienceCommand,
  writes: AudienceRow[],
): ControlResult {
  const { at } = command
  const write = (row: AudienceRow) => {
    writes.push(row)
    state.rows.set(row.id, row)
  }
  if (command.kind === 'create-audience') {
    const { org_id, app_id, name, target_rules, target_rules_given } = command.payload
    const row: AudienceRow = {
      id: ++state.maxId,
      org_id,
      app_id,
      name,
      target_rules: JSON.stringify(target_rules),
      target_rules_given: JSON.stringify(target_rules_given),
      created_at: at,
      updated_at: at,
      deleted_at: null,
      version: at,
    }
    write(row)
    return { status: 201, body: toRecord(row) }
  }
  const { org_id, app_id, audience_id } = command.payload
  const existing = state.rows.get(audience_id)
  // Another org's or app's audience answers like an unknown one: a key never learns it exists.
  if (!existing || existing.org_id !== org_id || existing.app_id !== app_id || existing.deleted_at !== null)
    return refused(404, `audience ${audience_id} not found`)
  const version = nextVersion(at, existing.version)
  if (command.kind === 'delete-audience') {
    write({ ...existing, deleted_at: at, version })
    return { status: 204, body: null }
  }
  const { name, target_rules, target_rules_given } = command.payload
  const row: AudienceRow = {
    ...existing,
    ...(name !== undefined && { name }),
    ...(target_rules !== undefined && {
      target_rules: JSON.stringify(target_rules),
      target_rules_given: JSON.stringify(target_rules_given ?? target_rules),
    }),
    // Never before the previous update, whatever the taking edge's clock says.
    updated_at: Math.max(at, existing.updated_at),
    version,
  }
  write(row)
  return { status: 200, body: toRecord(row) }
}
