import { z } from 'zod'
import { charsAtMost } from './events.ts'

/**
 * Wire format of the profile store ({profile_url}/v1/profiles, /v1/apps/:app_key/profiles,
 * /v1/customers): limits, the attribute rules of the spec, and the shapes of responses.
 *
 * The PATCH body is validated by a hand-written pure stage (pipelines/profiles/validate-changes.ts)
 * rather than zod, because the spec accepts a body whose items are partly invalid and reports each
 * ignored item: a schema that fails as a whole cannot express that.
 *
 * Lengths count Unicode code points, as in the events module.
 */

export const PROFILE_LIMITS = {
  keyMaxChars: 128,
  stringMaxChars: 255,
  customerIdMaxChars: 128,
  emailLookupMaxChars: 255,
  /** Largest PATCH body accepted; the spec names none, this bounds one bus record. */
  maxBodyBytes: 1024 * 1024,
} as const

/** A key may not begin with any of these (the spec's list: every ASCII punctuation character). */
export const FORBIDDEN_KEY_STARTS = '!"#$%&\'()*+,-./:;<=>?@[\\]^_`{|}~'

/** The special profile ids: single strings, org level only; the one exception to the `$` rule. */
export const SPECIAL_KEYS = ['$email', '$full_name', '$first_name', '$last_name'] as const
export type SpecialKey = (typeof SPECIAL_KEYS)[number]
export const isSpecialKey = (key: string): key is SpecialKey =>
  (SPECIAL_KEYS as readonly string[]).includes(key)

export const CHANGE_OPS = ['delete', 'assign', 'increment', 'set-add', 'set-remove'] as const
export type ChangeOp = (typeof CHANGE_OPS)[number]
export const isChangeOp = (op: unknown): op is ChangeOp =>
  typeof op === 'string' && (CHANGE_OPS as readonly string[]).includes(op)

/**
 * A value as stored and returned: integers are JSON numbers within ±(2^53 - 1), dates
 * `YYYY-MM-DD` strings, sets arrays of one element type. The tag keeps dates apart from strings.
 */
export type ProfileValue =
  | { type: 'string'; value: string }
  | { type: 'integer'; value: number }
  | { type: 'date'; value: string }
  | { type: 'set'; value: string[] | number[] }
export type ProfileValueType = ProfileValue['type']
export type WireValue = string | number | string[] | number[]

/** One entry of `ignored_changes`: which item (by position), its key and op as sent, and why. */
export interface IgnoredChange {
  index: number
  attr: string | null
  op: string | null
  reason: string
}

export interface ProfileResponse {
  attributes: Record<string, WireValue>
  vendor: { attributes: Record<string, string | number | boolean> }
  /** Only on app-scoped profiles inside a Customer. */
  app_id?: string
}

export interface CustomerResponse {
  id: string
  profiles: ProfileResponse[]
}

export const customerIdParam = z
  .string()
  .min(1)
  .refine((s) => charsAtMost(s, PROFILE_LIMITS.customerIdMaxChars), {
    message: `must be at most ${PROFILE_LIMITS.customerIdMaxChars} characters`,
  })

export const emailLookupQuery = z.object({
  email: z
    .string({ error: 'query parameter email is required' })
    .trim()
    .min(1, 'query parameter email is required')
    .refine((s) => charsAtMost(s, PROFILE_LIMITS.emailLookupMaxChars), { message: 'email is too long' }),
  /** Comma-separated app keys; empty items are dropped. */
  app_ids: z
    .string()
    .optional()
    .transform((v) => [
      ...new Set(
        (v ?? '')
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean),
      ),
    ]),
})
