import { type ControlResult } from '../../pipelines/control/commands.ts'
import type { Channel, InappCampaignBody, PushCampaignBody } from '../../schemas/campaigns.ts'
import { notFound, SluiceError } from '../shared/errors.ts'
import type { CommandSender } from './command-client.ts'
import { asControlAnswer } from './control-errors.ts'
import { newCommand } from './control-plane.ts'

export interface CampaignScope {
  orgId: number
  appId: string
  channel: Channel
}

/**
 * The edge's side of campaign writes: each is a control command (pipelines/campaigns/
 * campaign-commands.ts) the single applier allocates ids for; the answer it recorded is the HTTP
 * answer. A refusal (404, 422) becomes that error; no answer in time, 503 with Retry-After.
 */
export class CampaignControl {
  constructor(private readonly commands: CommandSender) {}

  create(scope: CampaignScope, body: PushCampaignBody | Omit<InappCampaignBody, never>) {
    return this.run(
      newCommand(
        'create-campaign',
        { org_id: scope.orgId, app_id: scope.appId, channel: scope.channel, body: asRecord(body) },
        Date.now(),
      ),
    )
  }

  update(scope: CampaignScope, id: number, body: PushCampaignBody | InappCampaignBody) {
    return this.run(
      newCommand(
        'update-campaign',
        {
          org_id: scope.orgId,
          app_id: scope.appId,
          channel: scope.channel,
          campaign_id: id,
          body: asRecord(body),
        },
        Date.now(),
      ),
    )
  }

  archive(scope: CampaignScope, id: number) {
    return this.run(
      newCommand(
        'archive-campaign',
        { org_id: scope.orgId, app_id: scope.appId, channel: scope.channel, campaign_id: id },
        Date.now(),
      ),
    )
  }

  remove(scope: CampaignScope, id: number) {
    return this.run(
      newCommand(
        'delete-campaign',
        { org_id: scope.orgId, app_id: scope.appId, channel: scope.channel, campaign_id: id },
        Date.now(),
      ),
    )
  }

  private async run(command: Parameters<CommandSender['submit']>[0]): Promise<ControlResult> {
    let result: ControlResult
    try {
      result = await this.commands.submit(command)
    } catch (err) {
      throw asControlAnswer(err)
    }
    if (result.status < 400) return result
    const body = (result.body ?? {}) as { error?: string; errors?: string[] }
    const message = body.error ?? `campaign command answered ${result.status}`
    if (result.status === 404) throw notFound(message)
    throw new SluiceError(
      'campaign_refused',
      result.status,
      message,
      body.errors ? { extra: { errors: body.errors } } : {},
    )
  }
}

const asRecord = (body: object) => body as unknown as Record<string, unknown>
