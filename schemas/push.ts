import { z } from 'zod'
import type { ProfileRules } from './audiences.ts'

/**
 * Wire formats of the push endpoint (POST {messaging_url}/v2/push/:app_id): the request body as
 * clients send it (validated by pipelines/push/validate-request.ts with the schemas below), and
 * the canonical request record the edge (and the campaign scheduler) put on the push-requests
 * topic. The record is versioned (`v`); see encodePushRequest.
 */

/*
 * A message as normalised by the edge. The same shapes as the transport port's (PushMessage in
 * pipelines/push/transport.ts, which the pipeline checks them against at compile time); written
 * out here so that schemas/ imports nothing from pipelines/.
 */
export interface PushAlert {
  title: string
  subtitle?: string
  body: string
}
export interface IosOptions {
  sound?: string
  badge?: number
  category?: string
  content_available?: boolean
  mutable_content?: boolean
  extra?: Record<string, unknown>
}
export interface AndroidAction {
  title: string
  icon?: string
  deeplink?: string
}
export interface AndroidOptions {
  priority?: 'high' | 'normal'
  extra?: Record<string, unknown>
}
export interface PushMessage {
  alert: string | PushAlert
  ios?: IosOptions
  android?: AndroidOptions
}

export const PUSH_LIMITS = {
  /** Largest request body; the spec names none. Bounds one bus record. */
  maxBodyBytes: 1024 * 1024,
  /** The request record on the bus (Kafka refuses records over 1 MB by default): 413 beyond. */
  maxRecordBytes: 900 * 1024,
  /** Messages of one (customer_id) request. */
  maxMessages: 10_000,
  /** "128 single-byte characters": counted in UTF-8 bytes. */
  customerIdMaxBytes: 128,
  requestIdMaxChars: 256,
  campaignKeyMaxChars: 255,
  /** New campaign keys per app per 24 hours (the spec's limit). */
  newCampaignKeysPerDay: 100,
  /** The de-duplication window of a request id (the spec's). */
  dedupeWindowMs: 24 * 60 * 60 * 1000,
} as const

export const TARGET_TYPES = ['broadcast', 'customer_id', 'audience_id', 'profile'] as const
export type TargetType = (typeof TARGET_TYPES)[number]
/**
 * Target types of request records: the endpoint's, and `campaign_slot`, which only campaign
 * execution produces: the installs one dispatch slot of a campaign occurrence assigned to one
 * creative (pipelines/campaigns/slot-targets.ts reads them; the message's target names the slot).
 */
export const RECORD_TARGET_TYPES = [...TARGET_TYPES, 'campaign_slot'] as const
export type RecordTargetType = (typeof RECORD_TARGET_TYPES)[number]

/** The 202 body of the endpoint. */
export const QUEUED_MESSAGE = 'Queued for delivery'

// Real clients send null for what they leave out: an optional field that is null is absent.
const optional = <T extends z.ZodType>(schema: T) =>
  schema.nullish().transform((v): z.output<T> | undefined => (v === null || v === undefined ? undefined : v))

const string = (name: string) => z.string({ error: `${name} must be a string` })

/** The top level of the body; messages are checked one by one against their target type. */
export const pushRequestEnvelope = z.object({
  request_id: optional(
    z.union([z.string(), z.number().int()], { error: 'request_id must be a string' }).transform(String),
  )
    .pipe(
      z
        .string()
        .max(PUSH_LIMITS.requestIdMaxChars, {
          error: `request_id must be at most ${PUSH_LIMITS.requestIdMaxChars} characters`,
        })
        .optional(),
    )
    // An empty request id is no id: one is generated, as for null. So is "null": a client that
    // sends that string means none, and taking it for an id would make all its pushes one.
    .transform((s) => (s === '' || s === 'null' ? undefined : s)),
  campaign_key: optional(string('campaign_key'))
    .pipe(
      z
        .string()
        .max(PUSH_LIMITS.campaignKeyMaxChars, {
          error: `campaign_key must be at most ${PUSH_LIMITS.campaignKeyMaxChars} characters`,
        })
        .refine((s) => !/\s/.test(s), { error: 'campaign_key must not contain spaces' })
        .optional(),
    )
    // A Python client of the original service sends the string "null" for no campaign key.
    .transform((s) => (s === '' || s === 'null' ? undefined : s)),
  target_type: z.enum(TARGET_TYPES, {
    error: (iss) =>
      iss.input === undefined
        ? 'target_type is required'
        : `target_type must be one of ${TARGET_TYPES.join(', ')}`,
  }),
  all_devices: optional(z.boolean({ error: 'all_devices must be true or false' })),
  messages: z
    .array(z.unknown(), {
      error: (iss) => (iss.input === undefined ? 'messages is required' : 'messages must be an array'),
    })
    .min(1, { error: 'messages must hold at least one message' })
    .max(PUSH_LIMITS.maxMessages, {
      error: `messages must hold at most ${PUSH_LIMITS.maxMessages} messages`,
    }),
})

/** `extra` of the iOS options: any keys, the known ones typed. */
const iosExtra = z.looseObject(
  {
    ll_deep_link_url: optional(string('ll_deep_link_url')),
    ll_attachment_url: optional(string('ll_attachment_url')),
    ll_attachment_type: optional(string('ll_attachment_type')),
  },
  { error: 'extra must be an object' },
)

const androidAction = z.object(
  {
    title: z.string({
      error: (iss) => (iss.input === undefined ? 'title is required' : 'title must be a string'),
    }),
    icon: optional(string('icon')),
    deeplink: optional(string('deeplink')),
  },
  { error: 'an action must be an object with a title' },
)

const androidExtra = z.looseObject(
  {
    ll_deep_link_url: optional(string('ll_deep_link_url')),
    ll_attachment_url: optional(string('ll_attachment_url')),
    // One action sent bare is one action.
    ll_actions: optional(
      z.preprocess(
        (v) => (v !== null && typeof v === 'object' && !Array.isArray(v) ? [v] : v),
        z.array(androidAction, { error: 'll_actions must be an array of actions' }),
      ),
    ),
  },
  { error: 'extra must be an object' },
)

/**
 * `alert` inside the platform options is not in the spec, but real clients send `alert: {}` there:
 * an empty object (or null) is accepted and dropped; anything in it is refused, because a client
 * that puts an alert there expects it shown and Sluice would not show it.
 */
const platformAlert = z.optional(
  z
    .unknown()
    .refine(
      (v) =>
        v === undefined ||
        v === null ||
        (typeof v === 'object' && !Array.isArray(v) && Object.keys(v).length === 0),
      { error: 'alert is not a platform option: put the alert at the top level of the message' },
    ),
)

export const iosOptionsSchema = z.object(
  {
    sound: optional(string('sound')),
    badge: optional(
      z
        .number({ error: 'badge must be an integer' })
        .int({ error: 'badge must be an integer' })
        .min(0, { error: 'badge must not be negative' }),
    ),
    category: optional(string('category')),
    content_available: optional(z.boolean({ error: 'content_available must be true or false' })),
    mutable_content: optional(z.boolean({ error: 'mutable_content must be true or false' })),
    extra: optional(iosExtra),
    alert: platformAlert,
  },
  { error: 'ios must be an object' },
)

export const androidOptionsSchema = z.object(
  {
    priority: optional(
      z.preprocess(
        (v) => (typeof v === 'string' ? v.toLowerCase() : v),
        z.enum(['high', 'normal'], { error: 'priority must be high or normal' }),
      ),
    ),
    extra: optional(androidExtra),
    alert: platformAlert,
  },
  { error: 'android must be an object' },
)

const alertObject = z.object({
  title: z.string({
    error: (iss) => (iss.input === undefined ? 'title is required' : 'title must be a string'),
  }),
  subtitle: optional(string('subtitle')),
  body: z.string({
    error: (iss) => (iss.input === undefined ? 'body is required' : 'body must be a string'),
  }),
})

/** The alert: a string ('' = silent push) or `{title, subtitle?, body}`; problems of the object by field. */
export const alertSchema = z.unknown().transform((v, ctx): string | z.output<typeof alertObject> => {
  if (typeof v === 'string') return v
  if (v === null || typeof v !== 'object' || Array.isArray(v)) {
    ctx.addIssue({ code: 'custom', message: 'alert must be a string or an object with title and body' })
    return z.NEVER
  }
  const parsed = alertObject.safeParse(v)
  if (parsed.success) return parsed.data
  for (const issue of parsed.error.issues)
    ctx.addIssue({ code: 'custom', message: issue.message, path: issue.path })
  return z.NEVER
})

/** A message's fields besides `target` (checked by target type in validate-request.ts). */
export const messageSchema = z.object(
  {
    alert: optional(alertSchema),
    ios: optional(iosOptionsSchema),
    android: optional(androidOptionsSchema),
  },
  { error: 'a message must be an object' },
)

export type PushRequestEnvelope = z.infer<typeof pushRequestEnvelope>

/** The iOS options as the transports get them: defaults filled in, `alert` dropped. */
export function normalIos(ios: z.infer<typeof iosOptionsSchema>): IosOptions {
  const out: IosOptions = {
    content_available: ios.content_available ?? true,
    mutable_content: ios.mutable_content ?? false,
  }
  if (ios.sound !== undefined) out.sound = ios.sound
  if (ios.badge !== undefined) out.badge = ios.badge
  if (ios.category !== undefined) out.category = ios.category
  if (ios.extra !== undefined) out.extra = withoutUndefined(ios.extra)
  return out
}

export function normalAndroid(android: z.infer<typeof androidOptionsSchema>): AndroidOptions {
  const out: AndroidOptions = {}
  if (android.priority !== undefined) out.priority = android.priority
  if (android.extra !== undefined) {
    const extra = withoutUndefined(android.extra)
    if (Array.isArray(extra.ll_actions))
      extra.ll_actions = (extra.ll_actions as AndroidAction[]).map((a) => {
        const action: AndroidAction = { title: a.title }
        if (a.icon !== undefined) action.icon = a.icon
        if (a.deeplink !== undefined) action.deeplink = a.deeplink
        return action
      })
    out.extra = extra
  }
  return out
}

export function normalAlert(alert: z.infer<typeof alertSchema> | undefined): string | PushAlert {
  if (alert === undefined) return ''
  if (typeof alert === 'string') return alert
  const out: PushAlert = { title: alert.title, body: alert.body }
  if (alert.subtitle !== undefined) out.subtitle = alert.subtitle
  return out
}

function withoutUndefined(o: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(o)) if (v !== undefined) out[k] = v
  return out
}

// ---------------------------------------------------------------------------------------------
// The request record on the push-requests topic (version 1)

/**
 * A profile target in canonical form (schemas/audiences.ts parsePushProfileTarget), compiled by
 * the audience compiler.
 */
export type CanonicalProfileTarget = ProfileRules

/** One message of a request: its target (by the request's target type) and what it says. */
export interface PushRequestMessage extends PushMessage {
  /** broadcast: absent; customer_id: the customer id; audience_id: the id; profile: the criteria. */
  target?: string | number | CanonicalProfileTarget
}

/**
 * One accepted push request, as the planner reads it from the push-requests topic. Producers: the
 * edge (POST /v2/push/:app_id) and the campaign scheduler (a campaign occurrence, with a
 * deterministic request id so a re-run is de-duplicated like a client's retry).
 *
 * Version 1. Adding an optional field is compatible (the decoder keeps unknown fields out and
 * ignores them); anything else is a new `v`.
 */
export interface PushRequestRecord {
  v: 1
  requestId: string
  appId: string
  orgId: number
  /** When it was accepted (ms since epoch): the start of its 24-hour de-duplication window. */
  receivedAt: number
  campaignKey: string | null
  targetType: RecordTargetType
  allDevices: boolean
  messages: PushRequestMessage[]
  /** Who made it: 'api' (the endpoint) or 'campaign' (the scheduler). */
  origin: 'api' | 'campaign'
  /** Tags of a campaign occurrence, carried onto every delivery row (0 / '' when absent). */
  campaignId?: number
  creative?: string
  /**
   * Not sent before this moment (ms since epoch): a campaign slot handed to the push pipeline
   * ahead of its start (pipelines/campaigns/executor.ts), so its first delivery batches are
   * planned and waiting at the sender when the moment comes. Absent: send at once.
   */
  notBefore?: number
}

/** Every request of one app goes to one partition: one planner owns an app's de-duplication. */
export const pushRequestKey = (appId: string) => appId

export function encodePushRequest(record: PushRequestRecord): {
  key: string
  value: Buffer
  headers: Record<string, string>
} {
  return {
    key: pushRequestKey(record.appId),
    value: Buffer.from(JSON.stringify(record)),
    headers: { v: String(record.v), app: record.appId, request: record.requestId },
  }
}

const canonicalProfile = z.object({
  operator: z.enum(['and', 'or']),
  criteria: z.array(z.unknown()).min(1),
})

const recordMessage = z.object({
  target: z.union([z.string(), z.number(), canonicalProfile]).optional(),
  alert: z.union([
    z.string(),
    z.object({ title: z.string(), subtitle: z.string().optional(), body: z.string() }),
  ]),
  ios: z.record(z.string(), z.unknown()).optional(),
  android: z.record(z.string(), z.unknown()).optional(),
})

const recordSchema = z.object({
  v: z.literal(1),
  requestId: z.string().min(1).max(PUSH_LIMITS.requestIdMaxChars),
  appId: z.string().min(1),
  orgId: z.number().int().nonnegative(),
  receivedAt: z.number().int().nonnegative(),
  campaignKey: z.string().min(1).nullable(),
  targetType: z.enum(RECORD_TARGET_TYPES),
  allDevices: z.boolean(),
  messages: z.array(recordMessage).min(1),
  origin: z.enum(['api', 'campaign']),
  campaignId: z.number().int().nonnegative().optional(),
  creative: z.string().optional(),
  notBefore: z.number().int().nonnegative().optional(),
})

/** The record, checked; a reason when it is not a version-1 push request (it is dead-lettered). */
export function decodePushRequest(
  value: Buffer,
): { ok: true; record: PushRequestRecord } | { ok: false; reason: string } {
  let parsed: unknown
  try {
    parsed = JSON.parse(value.toString('utf8'))
  } catch {
    return { ok: false, reason: 'push request record is not JSON' }
  }
  const result = recordSchema.safeParse(parsed)
  if (!result.success) {
    const issue = result.error.issues[0]
    return {
      ok: false,
      reason: `not a version-1 push request record: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'invalid'}`,
    }
  }
  return { ok: true, record: result.data as PushRequestRecord }
}
