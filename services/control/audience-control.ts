import type { AudienceRecord } from '../../pipelines/audiences/audience-commands.ts'
import { type ControlResult } from '../../pipelines/control/commands.ts'
import type { CommandSender } from './command-client.ts'
import { ControlCommandError } from './control-store.ts'
import { newCommand } from './control-plane.ts'

/** Rules of an audience as a command carries them: canonical and as given. */
export interface RulesPair {
  canonical: Record<string, unknown>
  given: Record<string, unknown>
}

/**
 * The edge's side of the audience commands (a sibling of ControlStore over the same sender): each
 * write is a command applied by the control applier, which allocates ids and checks that the
 * audience belongs to the org and app. A refusal (404) comes back as a ControlCommandError.
 */
export class AudienceControl {
  constructor(private readonly commands: CommandSender) {}

  async create(orgId: number, appId: string, name: string, rules: RulesPair): Promise<AudienceRecord> {
    const command = newCommand(
      'create-audience',
      { org_id: orgId, app_id: appId, name, target_rules: rules.canonical, target_rules_given: rules.given },
      Date.now(),
    )
    return expect(await this.commands.submit(command), 201) as AudienceRecord
  }

  /** A PUT carries both name and rules, a PATCH what it changes. */
  async update(
    orgId: number,
    appId: string,
    audienceId: number,
    change: { name?: string; rules?: RulesPair },
  ): Promise<AudienceRecord> {
    const command = newCommand(
      'update-audience',
      {
        org_id: orgId,
        app_id: appId,
        audience_id: audienceId,
        ...(change.name !== undefined && { name: change.name }),
        ...(change.rules && { target_rules: change.rules.canonical, target_rules_given: change.rules.given }),
      },
      Date.now(),
    )
    return expect(await this.commands.submit(command), 200) as AudienceRecord
  }

  async delete(orgId: number, appId: string, audienceId: number): Promise<void> {
    const command = newCommand(
      'delete-audience',
      { org_id: orgId, app_id: appId, audience_id: audienceId },
      Date.now(),
    )
    expect(await this.commands.submit(command), 204)
  }
}

function expect(result: ControlResult, status: number): unknown {
  if (result.status === status) return result.body
  const error = (result.body as { error?: unknown } | null)?.error
  throw new ControlCommandError(
    result.status,
    typeof error === 'string' ? error : `control command answered ${result.status}`,
  )
}
