import type { z } from 'zod'
import { eventLineSchema } from '../../schemas/events.ts'
import { parseJsonWellFormed } from '../text/unicode.ts'
import { invalidJson, isJsonObject, notAnObject, rejectUuid, tooLong, windowProblem } from './line-checks.ts'
import { utf8LongerThan } from './lines.ts'
import {
  toLineResult,
  type EventRejectReason,
  type LineResult,
  type ValidateContext,
} from './validate-event.ts'

/**
 * Reference path: the validation of validate-event.ts done through the zod schema in
 * schemas/events.ts. A test compares the two over many generated lines. Change both together.
 */

type EventField = keyof typeof eventLineSchema.shape

const FIELD_ORDER: Record<EventField, { rank: number; reason: EventRejectReason }> = {
  schema_url: { rank: 0, reason: 'invalid_schema_url' },
  app_uuid: { rank: 1, reason: 'invalid_app_uuid' },
  customer_id: { rank: 2, reason: 'invalid_customer_id' },
  event_name: { rank: 3, reason: 'invalid_event_name' },
  uuid: { rank: 4, reason: 'invalid_uuid' },
  event_time: { rank: 5, reason: 'invalid_event_time' },
  // rank 6: the event_time window, checked outside the schema
  attributes: { rank: 7, reason: 'invalid_attributes' },
  ltv_change: { rank: 8, reason: 'invalid_ltv_change' },
}
const WINDOW_RANK = 6

function issueDetail(issue: z.core.$ZodIssue): string {
  const nested = issue.code === 'invalid_key' ? issue.issues[0] : undefined
  const message = nested?.message ?? issue.message
  return issue.path.length <= 1 ? message : `${issue.path.map(String).join('.')}: ${message}`
}

/**
 * validateEventLine done with eventLineSchema. Slower; it exists so the fast path can be checked
 * against the schema that is published as JSON Schema. Reasons and events are identical to the
 * fast path's; details may be worded differently.
 */
export function validateEventLineBySchema(text: string, line: number, ctx: ValidateContext): LineResult {
  if (ctx.maxLineBytes !== undefined && utf8LongerThan(text, ctx.maxLineBytes))
    return toLineResult(tooLong(line, Buffer.byteLength(text, 'utf8'), ctx.maxLineBytes))
  let value: unknown
  try {
    value = parseJsonWellFormed(text)
  } catch (err) {
    return toLineResult(invalidJson(line, err))
  }
  if (!isJsonObject(value)) return toLineResult(notAnObject(line, value))
  const uuid = rejectUuid(value.uuid)
  const parsed = eventLineSchema.safeParse(value)
  let first: z.core.$ZodIssue | undefined
  let firstRank = Infinity
  let firstReason: EventRejectReason = 'not_an_object'
  for (const issue of parsed.error?.issues ?? []) {
    const field = FIELD_ORDER[issue.path[0] as EventField] as (typeof FIELD_ORDER)[EventField] | undefined
    const rank = field?.rank ?? -1
    if (rank < firstRank) {
      first = issue
      firstRank = rank
      firstReason = field?.reason ?? 'not_an_object'
    }
  }
  if (first && firstRank < WINDOW_RANK)
    return { kind: 'reject', line, uuid, reason: firstReason, detail: issueDetail(first) }
  const window = windowProblem('event_time', value.event_time as number, ctx)
  if (window !== undefined)
    return { kind: 'reject', line, uuid, reason: 'event_time_out_of_window', detail: window }
  if (first) return { kind: 'reject', line, uuid, reason: firstReason, detail: issueDetail(first) }
  if (!parsed.success) return toLineResult(notAnObject(line, value)) // unreachable: failures carry issues
  const d = parsed.data
  return {
    kind: 'ok',
    event: {
      line,
      app_uuid: d.app_uuid,
      customer_id: d.customer_id,
      event_name: d.event_name,
      event_time: d.event_time,
      uuid: d.uuid,
      attributes: d.attributes ?? {},
      ltv_change: d.ltv_change + 0,
    },
  }
}
