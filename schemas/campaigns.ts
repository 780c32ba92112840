import { z } from 'zod'
import { FILTER_OPERATORS } from './audiences.ts'
import { STARTING_TIME_ZONES } from './campaign-time-zones.ts'

/**
 * Push and in-app campaigns (spec: campaigns-and-audiences.md; Sluice's decisions on what it leaves
 * open are in docs/campaigns.md). These schemas are the wire formats: what a client may send and
 * what is stored and answered. Cross-field rules (exactly one schedule, weights summing to 100,
 * audience shapes, target rules) are checked in pipelines/campaigns/validate-campaign.ts, which
 * reports every broken rule with its JSON path.
 */

export const CAMPAIGN_LIMITS = {
  nameMaxChars: 255,
  maxCreatives: 26,
  maxFilters: 50,
  maxKeyValues: 50,
  keyMaxChars: 255,
  valueMaxChars: 1024,
  messageMaxChars: 4096,
  maxIntervals: 31,
  maxFrequencyAttributes: 10,
  /** push_throttle_num_msgs: messages per minute. */
  maxThrottlePerMinute: 10_000_000,
  /** A recurring campaign spans at most this many days (bounds the occurrences it can have). */
  maxRecurringDays: 3660,
  maxBodyBytes: 1024 * 1024,
} as const

export const GOALS = ['activate', 'drive_behavior', 'nurture', 'monetize', 'reengage', 'notify'] as const
export const CAMPAIGN_STATUSES = ['active', 'draft'] as const
/**
 * The spec shows is_one_of; the rest is Sluice's set (docs/campaigns.md, "Conversions"): the
 * same operators as an audience's event filters, so a conversion reads like a behavior rule.
 */
export const CONVERSION_OPERATORS = FILTER_OPERATORS
export type ConversionOperator = (typeof CONVERSION_OPERATORS)[number]
export const GROUP_OPERATORS = ['and', 'or'] as const
/**
 * `saved_audience` is the original's name for targeting saved audiences (its campaign script sends
 * it with `target_rules: {audiences: [id, …]}`); `audience` (with `audience_id`) is an alias of it.
 */
export const CAMPAIGN_TYPES = ['everyone', 'saved_audience', 'audience', 'target_rules'] as const
/** Saved audiences one campaign may target (their union). */
export const MAX_SAVED_AUDIENCES = 50
export const DEVICES = ['phone', 'tablet'] as const
export const DAYS_OF_WEEK = [
  'sunday',
  'monday',
  'tuesday',
  'wednesday',
  'thursday',
  'friday',
  'saturday',
] as const
export const INTERVALS = ['daily', 'weekly', 'monthly'] as const
export const FREQUENCY_NAMES = ['messages_per_days'] as const
export const INAPP_POSITIONS = ['center', 'top', 'bottom', 'full_screen'] as const

const { nameMaxChars, keyMaxChars, valueMaxChars } = CAMPAIGN_LIMITS
const text = (max: number) => z.string().max(max, `must be at most ${max} characters`)
const required = (max: number) =>
  z.string().trim().min(1, 'must not be empty').max(max, `must be at most ${max} characters`)

/** An ISO 8601 date-time (offset optional: without one it is read in the schedule's zone). */
const ISO_DATE_TIME =
  /^\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?)?(?:Z|[+-]\d{2}(?::?\d{2})?)?$/i
export const dateTime = z
  .string()
  .trim()
  .regex(ISO_DATE_TIME, 'must be an ISO 8601 date-time such as 2025-06-01T09:30:00Z')
  .refine((s) => !Number.isNaN(Date.parse(s.replace(' ', 'T').replace(/([+-]\d{2})(\d{2})$/, '$1:$2'))), {
    message: 'is not a valid date-time',
  })

/** Whether an ISO date-time names its own offset (Z or ±hh:mm); otherwise a zone gives it one. */
export const hasOffset = (s: string) => /(?:Z|[+-]\d{2}(?::?\d{2})?)$/i.test(s.trim()) && /[T ]/.test(s)

const filterValue = z.union([
  z.string().max(valueMaxChars, `must be at most ${valueMaxChars} characters`),
  z.number().transform(String),
  z.array(z.union([z.string().max(valueMaxChars), z.number().transform(String)])).max(100),
])

export const conversionFilter = z.object({
  dimension_name: required(keyMaxChars),
  operator: z.enum(CONVERSION_OPERATORS),
  value: filterValue.optional(),
})
export type ConversionFilter = z.infer<typeof conversionFilter>

export const conversionEvent = z.object({
  event_name: required(keyMaxChars),
  conversion_attributes: z
    .object({
      filters: z.array(conversionFilter).max(CAMPAIGN_LIMITS.maxFilters).default([]),
      operator: z.enum(GROUP_OPERATORS).default('and'),
    })
    .nullish()
    .transform((v) => v ?? undefined),
})
export type ConversionEvent = z.infer<typeof conversionEvent>

/** `target_rules.audiences`: the saved audiences a campaign targets, by id (one or more). */
export const savedAudienceIds = z
  .array(
    z
      .number()
      .int('must be an audience id (a positive integer)')
      .positive('must be an audience id (a positive integer)'),
  )
  .min(1, 'must name at least one audience')
  .max(MAX_SAVED_AUDIENCES, `must name at most ${MAX_SAVED_AUDIENCES} audiences`)

export const audiences = z.object({
  campaign_type: z.enum(CAMPAIGN_TYPES).optional(),
  control_group_percent: z
    .number()
    .int('must be an integer')
    .min(0, 'must be 0..100')
    .max(100, 'must be 0..100')
    .nullish()
    .transform((v) => v ?? 0),
  audience_id: z.number().int().positive().nullish(),
  /** Checked by the audience rules' own parser (schemas/audiences.ts) in validate-campaign.ts. */
  target_rules: z.unknown().optional(),
  devices: z.array(z.enum(DEVICES)).min(1, 'must name phone, tablet or both').max(2).nullish(),
})

const throttle = z
  .number()
  .int('must be an integer')
  .min(0, 'must be 0 (no limit) or more')
  .max(CAMPAIGN_LIMITS.maxThrottlePerMinute)
  .nullish()
const zoneId = z
  .number()
  .int()
  .refine((id) => STARTING_TIME_ZONES.has(id), {
    message: `must be one of the ids 1..${STARTING_TIME_ZONES.size} of docs/campaigns.md, "Time zones"`,
  })
  .nullish()
/** Sluice's switch for delivery at the wall-clock time in each device's time zone (the list's send_local_tz). */
const sendLocalTz = z
  .union([z.boolean(), z.literal(0), z.literal(1)])
  .nullish()
  .transform((v) => v === true || v === 1)

export const frequencyAttribute = z.object({
  name: z.enum(FREQUENCY_NAMES).default('messages_per_days'),
  days: z.number().int().min(1, 'must be 1 or more').max(365),
  count: z.number().int().min(1, 'must be 1 or more').max(1000),
  messages_atleast_days_apart: z.number().int().min(0).max(365).nullish(),
})
export type FrequencyAttribute = z.infer<typeof frequencyAttribute>

export const interval = z.object({
  interval: z.enum(INTERVALS),
  day_of_week: z
    .string()
    .transform((s) => s.trim().toLowerCase())
    .pipe(z.enum(DAYS_OF_WEEK))
    .nullish(),
  on_day: z.number().int().nullish(),
})
export type Interval = z.infer<typeof interval>

export const pushSchedule = z.object({
  // `true` is taken for an empty object: some clients send the switch, not its options.
  begin_immediately: z.union([z.literal(true), z.object({ push_throttle_num_msgs: throttle })]).nullish(),
  on_schedule: z
    .object({
      begin_date: dateTime,
      starting_time_zone_id: zoneId,
      push_throttle_num_msgs: throttle,
      send_local_tz: sendLocalTz,
    })
    .nullish(),
  recurring: z
    .object({
      begin_date: dateTime,
      end_date: dateTime,
      starting_time_zone_id: zoneId,
      push_throttle_num_msgs: throttle,
      send_local_tz: sendLocalTz,
      frequency_attributes: z.array(frequencyAttribute).max(CAMPAIGN_LIMITS.maxFrequencyAttributes).nullish(),
      intervals: z
        .array(interval)
        .min(1, 'must hold at least one interval')
        .max(CAMPAIGN_LIMITS.maxIntervals),
    })
    .nullish(),
  optimized: z.object({ fallback_time: dateTime }).nullish(),
})

const keyValues = z
  .array(z.object({ key: required(keyMaxChars), value: text(valueMaxChars) }))
  .max(CAMPAIGN_LIMITS.maxKeyValues)
  .nullish()
  .transform((v) => v ?? [])

const percent = z.number().int('must be an integer').min(0, 'must be 0..100').max(100, 'must be 0..100')

export const pushCreative = z.object({
  id: z.number().int().positive().nullish(),
  title: text(nameMaxChars).nullish(),
  percent: percent.nullish(),
  key_values: keyValues,
  build_attributes: z.object({
    push_message: text(CAMPAIGN_LIMITS.messageMaxChars),
    push_title: text(nameMaxChars).nullish(),
    push_subtitle: text(nameMaxChars).nullish(),
    push_category: z
      .string()
      .regex(/^[A-Za-z0-9_.-]{1,64}$/, 'must be 1..64 letters, digits, _ . -')
      .nullish(),
    ll_deep_link_url: z
      .string()
      .max(2048)
      .refine((s) => URL.canParse(s), { message: 'must be an absolute URL (scheme://…)' })
      .nullish(),
    sound: text(255).nullish(),
  }),
})

export const inappCreative = z.object({
  id: z.number().int().positive().nullish(),
  title: text(nameMaxChars).nullish(),
  percent: percent.nullish(),
  position: z.enum(INAPP_POSITIONS).nullish(),
  key_values: keyValues,
  /** Names of files already stored for this creative (an update that sends no new file keeps them). */
  file_phone: z.string().nullish(),
  file_tablet: z.string().nullish(),
})

/** A single creative object is accepted too: validate-campaign.ts wraps it in a list first. */
const creativesOf = <S extends z.ZodType>(creative: S) =>
  z.array(creative).min(1, 'must hold at least one creative').max(CAMPAIGN_LIMITS.maxCreatives)

const campaignBase = {
  name: required(nameMaxChars),
  status: z.enum(CAMPAIGN_STATUSES),
  goal: z.enum(GOALS),
  conversion_event: conversionEvent.nullish(),
  audiences,
}

export const pushCampaignInput = z.object({
  ...campaignBase,
  schedule: pushSchedule,
  creatives: creativesOf(pushCreative),
})
export type PushCampaignInput = z.infer<typeof pushCampaignInput>

export const inappSchedule = z.object({
  trigger_name: text(nameMaxChars).nullish(),
  trigger_type: text(nameMaxChars).nullish(),
  event_name: text(keyMaxChars).nullish(),
  filter_attributes: z
    .object({
      filters: z.array(conversionFilter).max(CAMPAIGN_LIMITS.maxFilters).default([]),
      operator: z.enum(GROUP_OPERATORS).default('and'),
    })
    .nullish(),
  begin_date: dateTime,
  end_date: dateTime.nullish(),
  starting_time_zone_id: zoneId,
  frequency_attributes: z.array(frequencyAttribute).max(CAMPAIGN_LIMITS.maxFrequencyAttributes).nullish(),
})

export const inappCampaignInput = z.object({
  ...campaignBase,
  schedule: inappSchedule,
  creatives: creativesOf(inappCreative),
})
export type InappCampaignInput = z.infer<typeof inappCampaignInput>

// ---- What is stored and answered (canonical: nulls dropped, defaults filled, ids assigned) ----

export interface StoredFilterGroup {
  filters: ConversionFilter[]
  operator: 'and' | 'or'
}

export interface StoredConversionEvent {
  event_name: string
  conversion_attributes?: StoredFilterGroup
}

export interface StoredAudiences {
  campaign_type: (typeof CAMPAIGN_TYPES)[number]
  control_group_percent: number
  /** One saved audience, as sent in `audience_id`. */
  audience_id?: number
  /**
   * Saved audiences as the original's script sends them (`target_rules.audiences`): answered in
   * that shape; the campaign targets their union.
   */
  audience_ids?: number[]
  /** As the audience rules' parser canonicalised them. */
  target_rules?: unknown
  devices?: (typeof DEVICES)[number][]
}

export interface StoredInterval {
  interval: (typeof INTERVALS)[number]
  day_of_week?: (typeof DAYS_OF_WEEK)[number]
  on_day?: number
  /** Added in answers: the first occurrence of this interval (ISO, UTC). */
  interval_start?: string
}

export interface StoredFrequency {
  name: (typeof FREQUENCY_NAMES)[number]
  days: number
  count: number
  messages_atleast_days_apart?: number
}

export type StoredPushSchedule =
  | { begin_immediately: { push_throttle_num_msgs?: number } }
  | {
      on_schedule: {
        begin_date: string
        starting_time_zone_id?: number
        push_throttle_num_msgs?: number
        send_local_tz?: boolean
      }
    }
  | {
      recurring: {
        begin_date: string
        end_date: string
        starting_time_zone_id?: number
        push_throttle_num_msgs?: number
        send_local_tz?: boolean
        frequency_attributes?: StoredFrequency[]
        intervals: StoredInterval[]
      }
    }
  | { optimized: { fallback_time: string } }

export interface StoredPushCreative {
  id: number
  letter: string
  title?: string
  percent: number
  key_values: { key: string; value: string }[]
  build_attributes: {
    push_message: string
    push_title?: string
    push_subtitle?: string
    push_category?: string
    ll_deep_link_url?: string
    sound?: string
  }
}

export interface StoredInappSchedule {
  trigger_name?: string
  trigger_type?: string
  event_name?: string
  filter_attributes?: StoredFilterGroup
  begin_date: string
  end_date?: string
  starting_time_zone_id?: number
  frequency_attributes?: StoredFrequency[]
}

/** One stored asset of an in-app creative: the name the client sees, where the files port keeps it. */
export interface StoredAsset {
  name: string
  path: string
  kind: 'html' | 'zip'
  bytes: number
  sha256: string
}

export interface StoredInappCreative {
  id: number
  letter: string
  title?: string
  percent: number
  position: (typeof INAPP_POSITIONS)[number]
  key_values: { key: string; value: string }[]
  file_phone?: string
  file_tablet?: string
}

interface CampaignCommon {
  name: string
  status: (typeof CAMPAIGN_STATUSES)[number]
  goal: (typeof GOALS)[number]
  conversion_event?: StoredConversionEvent
  audiences: StoredAudiences
}

export interface PushCampaignBody extends CampaignCommon {
  schedule: StoredPushSchedule
  creatives: StoredPushCreative[]
  /** The client sent `creatives` as one object, not a list: answers keep its shape. */
  creatives_as_object?: boolean
}

export interface InappCampaignBody extends CampaignCommon {
  schedule: StoredInappSchedule
  creatives: StoredInappCreative[]
  creatives_as_object?: boolean
  /** Per creative letter, its stored files (not answered: the answer names files only). */
  assets: Record<string, { phone?: StoredAsset; tablet?: StoredAsset }>
}

export type Channel = 'push' | 'inapp'

// ---- List and search ----

export const LIST_STATUSES = ['scheduled', 'draft', 'active', 'inactive', 'expired', 'sent', 'test'] as const
export const SEARCH_STATUSES = [...LIST_STATUSES, 'error'] as const
export type ListStatus = (typeof SEARCH_STATUSES)[number]
export const LIST_CHANNELS = ['push', 'in-app', 'inbox', 'places'] as const

const commaList = <T extends readonly [string, ...string[]]>(values: T, what: string) =>
  z
    .string()
    .transform((s) =>
      s
        .split(',')
        .map((v) => v.trim().toLowerCase())
        .filter((v) => v !== ''),
    )
    .pipe(
      z.array(
        z.enum(values, { message: `${what} must be one or more of ${values.join(', ')} (comma-separated)` }),
      ),
    )

const intParam = (min: number, max: number, what: string) =>
  z
    .string()
    .regex(/^\s*\d+\s*$/, `${what} must be an integer ${min}..${max}`)
    .transform(Number)
    .pipe(
      z.number().int().min(min, `${what} must be ${min}..${max}`).max(max, `${what} must be ${min}..${max}`),
    )

export const MAX_PER_PAGE = 1000

export function listQuery(search: boolean) {
  return z.object({
    key: search
      ? z.string().trim().min(1, 'key is required: a campaign name (or part of one) or id').max(255)
      : z.string().optional(),
    channel: commaList(['push', 'in-app', 'inapp', 'inbox', 'places'] as const, 'channel').optional(),
    status: (search ? commaList(SEARCH_STATUSES, 'status') : commaList(LIST_STATUSES, 'status')).optional(),
    sort_by: z
      .enum(['created_at', 'name'], { message: 'sort_by must be created_at or name' })
      .default('created_at'),
    sort_order: z.enum(['asc', 'desc'], { message: 'sort_order must be asc or desc' }).default('desc'),
    per_page: intParam(1, MAX_PER_PAGE, 'per_page').default(100),
    page_number: intParam(1, 1_000_000, 'page_number').default(1),
    recurring: intParam(0, 3, 'recurring').default(0),
    is_archived: intParam(0, 1, 'is_archived').optional(),
  })
}
export type ListQuery = z.infer<ReturnType<typeof listQuery>>

export interface CampaignListItem {
  id: number
  name: string
  message_type: 'push' | 'in-app'
  platform: string
  send_local_tz: number
  recurring: number
  begin_date: string | null
  end_date: string | null
  created_at: string
  updated_at: string
  status: ListStatus
  sends: number
  open_rate: string
}
