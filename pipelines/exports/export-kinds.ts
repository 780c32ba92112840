import { EXPORT_PLANS, SOURCE_TYPES } from '../../schemas/exports.ts'

/**
 * What can be exported (docs/exports.md): the sources the dashboard enables exports of, and the
 * job types of each. One export job is one (source, job type); the API lists and serves jobs.
 */

export type SourceType = (typeof SOURCE_TYPES)[number]

export const AUDIENCE_JOB_TYPES = ['idfa', 'gaid', 'email', 'customer_id'] as const
export type AudienceJobType = (typeof AUDIENCE_JOB_TYPES)[number]

export const PROFILE_JOB_TYPES = ['profile', 'profile_changes'] as const
export type ProfileJobType = (typeof PROFILE_JOB_TYPES)[number]

export type JobType = AudienceJobType | ProfileJobType | 'logs'

export const JOB_TYPES_OF: Record<SourceType, readonly JobType[]> = {
  audiences: AUDIENCE_JOB_TYPES,
  profiles: PROFILE_JOB_TYPES,
  logs: ['logs'],
}

export const isJobTypeOf = (source: SourceType, jobType: string): jobType is JobType =>
  (JOB_TYPES_OF[source] as readonly string[]).includes(jobType)

/**
 * The key of an audience export row, by identifier type: `{"IDFA": …}` as the spec shows, the
 * others in the same upper-case spelling.
 */
export const IDENTIFIER_KEYS: Record<AudienceJobType, string> = {
  idfa: 'IDFA',
  gaid: 'GAID',
  email: 'EMAIL',
  customer_id: 'CUSTOMER_ID',
}

/** source_type of an export list item, as the spec's field table spells it. */
export const LIST_SOURCE_TYPE: Record<'audiences' | 'profiles', string> = {
  audiences: 'audiences',
  profiles: 'profile',
}

/** The export plans of an org and what each allows (caps are configuration). */
export type ExportPlan = (typeof EXPORT_PLANS)[number]

export interface ExportCaps {
  /** Audience exports of an org on the standard plan. */
  audiences: number
  /** Audience exports of an org on the remarketing plan. */
  audiencesRemarketing: number
  /** Profile exports of an org. */
  profiles: number
}

export const DAY_MS = 86_400_000
export const HOUR_MS = 3_600_000
