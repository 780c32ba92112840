import type { ControlArea } from '../control/control-area.ts'
import {
  applyCampaignCommand,
  campaignNeeds,
  campaignPayloads,
  copyCampaignState,
  emptyCampaignState,
  type CampaignNeeds,
  type CampaignRow,
  type CampaignState,
} from './campaign-commands.ts'
import { readCampaignState } from './campaign-state.ts'

/** Campaigns in the control plane (registered by services/control/control-plane.ts). */
export const campaignArea: ControlArea<
  'campaigns',
  typeof campaignPayloads,
  CampaignState,
  CampaignNeeds,
  { campaigns: CampaignRow }
> = {
  name: 'campaigns',
  payloads: campaignPayloads,
  tables: ['campaigns'],
  needs: campaignNeeds,
  read: readCampaignState,
  copy: (state) => copyCampaignState(state ?? emptyCampaignState()),
  apply: (state, command, writes) => applyCampaignCommand(state, command, writes.campaigns),
}
