import { z } from 'zod'
import { EXPORT_NAME_MAX, EXPORT_PLANS, SOURCE_TYPES } from '../../schemas/exports.ts'

/**
 * The control commands of exports (the dashboard enables and disables them through the admin
 * API), registered in pipelines/control/commands.ts. The caps travel in the command, as the
 * taking edge's configuration has them, so applying a command again decides the same way.
 */

const orgId = z.number().int().positive()
const cap = z.number().int().nonnegative()

export const exportPayloads = {
  'enable-export': z.object({
    org_id: orgId,
    source_type: z.enum(SOURCE_TYPES),
    /** The audience id or profile db id (decimal), or the app id of a log export. */
    source_id: z.string().min(1).max(128),
    job_types: z.array(z.string().min(1).max(40)).min(1).max(8),
    name: z.string().min(1).max(EXPORT_NAME_MAX).optional(),
    caps: z.object({ audiences: cap, audiences_remarketing: cap, profiles: cap }),
  }),
  'disable-export': z.object({ org_id: orgId, export_id: z.number().int().positive() }),
  'set-export-plan': z.object({ org_id: orgId, plan: z.enum(EXPORT_PLANS) }),
} as const
