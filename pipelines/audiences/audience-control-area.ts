import type { ControlArea } from '../control/control-area.ts'
import {
  applyAudienceCommand,
  audienceIdsNamed,
  copyAudienceState,
  type AudienceRow,
  type AudienceState,
  type MutableAudienceState,
} from './audience-commands.ts'
import { audiencePayloads } from './audience-payloads.ts'
import { readAudienceState } from './audience-state.ts'

/** Audiences in the control plane (registered by services/control/control-plane.ts). */
export const audienceArea: ControlArea<
  'audiences',
  typeof audiencePayloads,
  AudienceState,
  number[],
  { audiences: AudienceRow },
  MutableAudienceState
> = {
  name: 'audiences',
  payloads: audiencePayloads,
  tables: ['audiences'],
  needs: audienceIdsNamed,
  read: readAudienceState,
  copy: copyAudienceState,
  apply: (state, command, writes) => applyAudienceCommand(state, command, writes.audiences),
}
