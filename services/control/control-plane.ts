import { audienceArea } from '../../pipelines/audiences/audience-control-area.ts'
import { campaignArea } from '../../pipelines/campaigns/campaign-control-area.ts'
import {
  controlPlane,
  type CommandIn,
  type NeedsIn,
  type StateIn,
  type WritesIn,
} from '../../pipelines/control/apply-command.ts'
import { commandDecoder } from '../../pipelines/control/commands.ts'
import type { CommandEnvelope } from '../../pipelines/control/control-area.ts'
import { exportArea } from '../../pipelines/exports/export-control-area.ts'
import { pushTransportArea } from '../../pipelines/push/transport-commands.ts'
import { appSettingsArea } from '../../pipelines/query/app-settings-commands.ts'

/**
 * The areas whose records are control-plane commands, registered with the control plane here
 * (it knows none of them): their kinds are decoded and applied by the one applier, in topic
 * order, with orgs, apps and keys (docs/control-plane.md, "Adding a kind of record").
 */
export const CONTROL_AREAS = [
  audienceArea,
  campaignArea,
  pushTransportArea,
  appSettingsArea,
  exportArea,
] as const

export const CONTROL = controlPlane(CONTROL_AREAS)

type Areas = typeof CONTROL_AREAS
/** Any command of the control plane or of a registered area, its payload typed by its kind. */
export type ControlCommand = CommandIn<Areas>
export type CommandKind = ControlCommand['kind']
export type CommandPayload<K extends CommandKind> = Extract<ControlCommand, { kind: K }>['payload']
export type ControlState = StateIn<Areas>
export type StateNeeds = NeedsIn<Areas>
export type ControlWrites = WritesIn<Areas>

/** A command of `kind`, its payload checked against the kind's. */
export const newCommand: <K extends CommandKind>(
  kind: K,
  payload: CommandPayload<K>,
  at: number,
  commandId?: string,
) => CommandEnvelope<K, CommandPayload<K>> = (kind, payload, at, commandId = crypto.randomUUID()) => ({
  v: 1,
  id: commandId,
  kind,
  at,
  payload,
})

export const decodeCommand = commandDecoder<ControlCommand>(CONTROL.payloads)
