import { z } from 'zod'

/** The sources exports are enabled for (pipelines/exports/export-kinds.ts: their job types). */
export const SOURCE_TYPES = ['audiences', 'profiles', 'logs'] as const

/** The export plans of an org (the caps of each are configuration). */
export const EXPORT_PLANS = ['standard', 'remarketing'] as const

/** Longest name of an export job. */
export const EXPORT_NAME_MAX = 200

/** POST /admin/v1/orgs/:org_id/exports: enable (or enable again) the exports of one source. */
export const enableExportBody = z.object({
  source_type: z.enum(SOURCE_TYPES),
  /** The audience id, the profile db id, or the app id (logs). */
  source_id: z.union([
    z.number().int().positive().transform(String),
    z
      .string()
      .trim()
      .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'source_id: an id or app id'),
  ]),
  /** Default: every job type of the source (audiences: idfa, gaid, email, customer_id; profiles: profile, profile_changes). */
  job_types: z.array(z.string().min(1).max(40)).min(1).max(8).optional(),
  name: z.string().trim().min(1).max(EXPORT_NAME_MAX).optional(),
})

/** PUT /admin/v1/orgs/:org_id/export-plan */
export const exportPlanBody = z.object({ plan: z.enum(EXPORT_PLANS) })

/** POST /admin/v1/orgs/:org_id/exports/:export_id/refresh; `hour` (log exports): 2026-11-23T13 (UTC). */
export const refreshExportBody = z.object({
  hour: z
    .string()
    .regex(/^\d{4}-\d{2}-\d{2}T\d{2}$/, 'hour: YYYY-MM-DDTHH (UTC)')
    .optional(),
})
