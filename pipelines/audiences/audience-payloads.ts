import { z } from 'zod'

/**
 * The control commands of audiences (what the edge sends, what the applier applies): their
 * payloads, registered in pipelines/control/commands.ts. The edge has parsed `target_rules` with
 * schemas/audiences.ts before it sends one, so the applier only stores them: a later change of the
 * rule language never makes a command already on the topic undecodable.
 */

/** An audience name: 1 to 200 characters, trimmed by the edge. */
export const AUDIENCE_NAME_MAX = 200

const orgId = z.number().int().positive()
const appId = z.string().min(1).max(128)
const audienceId = z.number().int().positive()
const name = z.string().min(1).max(AUDIENCE_NAME_MAX)
/** A JSON object: the canonical rules, or the rules as the request gave them. */
const rules = z.record(z.string(), z.unknown())

export const audiencePayloads = {
  'create-audience': z.object({
    org_id: orgId,
    app_id: appId,
    name,
    target_rules: rules,
    target_rules_given: rules,
  }),
  /**
   * PUT carries name and rules, PATCH what it changes: the applier merges the change into the
   * audience as it stands when the command is applied, so two updates taken by two edges at once
   * both apply, in topic order, and neither is lost to a stale read.
   */
  'update-audience': z.object({
    org_id: orgId,
    app_id: appId,
    audience_id: audienceId,
    name: name.optional(),
    target_rules: rules.optional(),
    target_rules_given: rules.optional(),
  }),
  'delete-audience': z.object({ org_id: orgId, app_id: appId, audience_id: audienceId }),
} as const
