import { isChangeOp } from '../../schemas/profiles.ts'
import type { BusRecord, ProduceMessage } from '../connectors/bus/bus.ts'
import type { NormalizedChange } from './validate-changes.ts'

interface CommandBase {
  v: 1
  org: number
  /** The profile db: the org's, or the app's. */
  db: number
  /** App key of an app-level profile; '' at org level. */
  app: string
  customer: string
  /** When the edge accepted the request (ms since epoch): the change log's time. */
  receivedAt: number
}

/** One accepted request, as the edge writes it to the bus. */
export type ProfileCommand =
  (CommandBase & { op: 'patch'; changes: NormalizedChange[] }) | (CommandBase & { op: 'delete-profile' })

/** Keyed so every request of one customer of one profile db lands in one partition, in order. */
export const commandKey = (db: number, customer: string) => `${db}:${customer}`

export function encodeCommand(command: ProfileCommand): ProduceMessage {
  return { key: commandKey(command.db, command.customer), value: Buffer.from(JSON.stringify(command)) }
}

/**
 * The edge wrote these, so a record that does not decode is corruption or a version this worker
 * does not know; the writer records it and moves on rather than redelivering it forever.
 */
export function decodeCommand(
  record: BusRecord,
): { ok: true; command: ProfileCommand } | { ok: false; reason: string } {
  let value: unknown
  try {
    value = JSON.parse(record.value.toString('utf8'))
  } catch {
    return { ok: false, reason: 'record is not JSON' }
  }
  if (value === null || typeof value !== 'object') return { ok: false, reason: 'record is not an object' }
  const c = value as Record<string, unknown>
  if (c.v !== 1) return { ok: false, reason: `unknown record version ${JSON.stringify(c.v)}` }
  if (
    !Number.isSafeInteger(c.org) ||
    !Number.isSafeInteger(c.db) ||
    typeof c.app !== 'string' ||
    typeof c.customer !== 'string' ||
    c.customer === '' ||
    typeof c.receivedAt !== 'number'
  )
    return { ok: false, reason: 'record lacks org, db, app, customer or receivedAt' }
  if (c.op === 'delete-profile') return { ok: true, command: value as ProfileCommand }
  if (c.op !== 'patch' || !Array.isArray(c.changes))
    return { ok: false, reason: `unknown op ${JSON.stringify(c.op)}` }
  for (const change of c.changes as unknown[]) {
    const ch = change as Record<string, unknown> | null
    if (!ch || !isChangeOp(ch.op) || typeof ch.attr !== 'string' || typeof ch.index !== 'number')
      return { ok: false, reason: 'record holds a malformed change' }
  }
  return { ok: true, command: value as ProfileCommand }
}
