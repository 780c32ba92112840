import { randomUUID } from 'node:crypto'
import { z } from 'zod'
import { wellFormedValue } from '../text/unicode.ts'
import type { BusRecord, ProduceMessage } from '../connectors/bus/bus.ts'
import { SCOPES } from '../../schemas/admin.ts'
import type { CommandEnvelope, CommandOf, PayloadSchemas } from './control-area.ts'

export type { ControlResult } from './control-area.ts'

/**
 * Control-plane writes as commands (DESIGN.md, "The control plane holds across edges"): any edge
 * produces them onto one partition of the control topic; one owner (the control applier's
 * consumer group) applies them in topic order, allocates ids and enforces uniqueness, and records
 * each command's answer in `control_results`, where the edge that took it waits for it.
 *
 * Every command goes to this partition: one order over all of them and one applier at a time,
 * whatever partition count the topic has (services/topology.ts).
 */
export const CONTROL_PARTITION = 0

const id = z.string().min(1).max(200)
const orgId = z.number().int().positive()
const name = z.string().min(1).max(200)

/**
 * What each of the control plane's own kinds carries; the areas bring theirs (control-area.ts).
 * Everything random (app keys, API keys, secrets) is drawn by the edge, so a replay writes the
 * same rows.
 */
export const corePayloads = {
  'create-org': z.object({ name }),
  'create-app': z.object({ org_id: orgId, name, app_id: z.string().min(1).max(128) }),
  // The secret never travels: the edge keeps it for its answer and sends only its hash.
  'create-key': z.object({
    org_id: orgId,
    api_key: z.string().min(1).max(128),
    secret_hash: z.string().regex(/^[0-9a-f]{64}$/),
    scopes: z.array(z.enum(SCOPES)).min(1),
  }),
  'revoke-key': z.object({ org_id: orgId, api_key: z.string().min(1).max(128) }),
  /** A due job of the scheduler: its command id is `${job}:${period_start}`, the same from every scheduler. */
  'run-job': z.object({ job: z.string().min(1).max(100), period_start: z.number().int().nonnegative() }),
} as const

/** A command of the control plane's own kinds. */
export type CoreCommand = CommandOf<typeof corePayloads>

/** Any command, of any area: what the applier, the journal and the topic carry. */
export type ControlCommand = CommandEnvelope

export function newCommand<K extends string, P>(
  kind: K,
  payload: P,
  at: number,
  commandId: string = randomUUID(),
): CommandEnvelope<K, P> {
  return { v: 1, id: commandId, kind, at, payload }
}

export const jobCommandId = (job: string, periodStart: number) => `${job}:${periodStart}`

export function encodeCommand(command: ControlCommand): ProduceMessage {
  return { partition: CONTROL_PARTITION, value: Buffer.from(JSON.stringify(command)) }
}

export type DecodedCommand<C> = { ok: true; command: C } | { ok: false; reason: string }

/**
 * The decoder of the commands of these kinds (the control plane's and the areas'). Edges wrote
 * them, so a record that does not decode is corruption or a newer version: the applier
 * dead-letters it (nothing was applied) and moves on. Strings come out well formed.
 */
export function commandDecoder<C extends ControlCommand>(
  payloads: PayloadSchemas,
): (record: Pick<BusRecord, 'value'>) => DecodedCommand<C> {
  const kinds = Object.keys(payloads) as [string, ...string[]]
  const envelope = z.object({
    v: z.literal(1),
    id,
    kind: z.enum(kinds),
    at: z.number().int().nonnegative(),
    payload: z.unknown(),
  })
  return (record) => {
    let value: unknown
    try {
      value = wellFormedValue(JSON.parse(record.value.toString('utf8')))
    } catch {
      return { ok: false, reason: 'control command is not JSON' }
    }
    const head = envelope.safeParse(value)
    if (!head.success)
      return { ok: false, reason: `malformed control command: ${head.error.issues[0]?.message}` }
    const payload = payloads[head.data.kind]!.safeParse(head.data.payload)
    if (!payload.success)
      return {
        ok: false,
        reason: `malformed ${head.data.kind} payload: ${payload.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`,
      }
    return { ok: true, command: { ...head.data, payload: payload.data } as C }
  }
}
