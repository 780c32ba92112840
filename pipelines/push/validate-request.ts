import type { z } from 'zod'
import { parsePushProfileTarget } from '../../schemas/audiences.ts'
import {
  messageSchema,
  normalAlert,
  normalAndroid,
  normalIos,
  PUSH_LIMITS,
  pushRequestEnvelope,
  type CanonicalProfileTarget,
  type PushRequestMessage,
  type TargetType,
} from '../../schemas/push.ts'

/** A problem with the request, and where it is (`messages[2].ios.badge`). */
export interface RequestIssue {
  path: string
  message: string
}

/** A request as the edge accepted it: what the record carries besides app, org, time and id. */
export interface ValidRequest {
  requestId: string | undefined
  campaignKey: string | null
  targetType: TargetType
  allDevices: boolean
  messages: PushRequestMessage[]
}

export type ValidationResult = { ok: true; request: ValidRequest } | { ok: false; issues: RequestIssue[] }

/**
 * Every rule of the spec's push request, message, profile target, iOS and Android tables (pure).
 * Tolerant of what real clients of the original service send (DESIGN.md): `request_id` and
 * `campaign_key` as null (or the string "null", as one Python client sends), request ids that are
 * not GUIDs (any string, or a number), `all_devices: true` with any target type, a scalar
 * where `values` is an array (the profile parser's rule), `alert: {}` inside `ios`/`android`, and
 * a message without `alert` (a silent push, as `""`). Unknown fields are ignored. Every problem
 * is reported, each with its path.
 */
export function validatePushRequest(body: unknown): ValidationResult {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return { ok: false, issues: [{ path: '', message: 'the body must be a JSON object' }] }
  const envelope = pushRequestEnvelope.safeParse(body)
  const issues: RequestIssue[] = []
  if (!envelope.success) {
    issues.push(...zodIssues(envelope.error))
    // The messages are still checked when their type and list are sound, so all is said at once.
    const failed = new Set(envelope.error.issues.map((i) => i.path[0]))
    if (failed.has('target_type') || failed.has('messages')) return { ok: false, issues }
  }
  const given = body as { target_type: TargetType; messages: unknown[]; all_devices?: unknown }
  const { request_id, campaign_key, target_type, all_devices, messages } = envelope.success
    ? envelope.data
    : {
        request_id: undefined,
        campaign_key: undefined,
        target_type: given.target_type,
        all_devices: given.all_devices === true,
        messages: given.messages,
      }
  // all_devices means something for customer_id only; a real client (a Java one) sends it true
  // with every target type, where every device is targeted anyway: it is ignored there.
  if (messages.length > 1 && target_type !== 'customer_id')
    issues.push({
      path: 'messages',
      message: `several messages are only allowed with target_type customer_id, not ${target_type}`,
    })
  const out: PushRequestMessage[] = []
  const customers = new Map<string, number>()
  messages.forEach((raw, i) => {
    const at = `messages[${i}]`
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) {
      issues.push({ path: at, message: 'a message must be an object' })
      return
    }
    const parsed = messageSchema.safeParse(raw)
    if (!parsed.success) {
      for (const issue of zodIssues(parsed.error, at)) issues.push(issue)
    }
    const target = checkTarget(target_type, (raw as { target?: unknown }).target, `${at}.target`)
    if (!target.ok) for (const issue of target.issues) issues.push(issue)
    if (!parsed.success || !target.ok) return
    if (target_type === 'customer_id') {
      const customer = target.target as string
      const earlier = customers.get(customer)
      // One delivery per (request, install): two messages for one customer would need two.
      if (earlier !== undefined)
        issues.push({
          path: `${at}.target`,
          message: `customer ${customer} is already the target of messages[${earlier}]; send one message per customer in a request`,
        })
      else customers.set(customer, i)
    }
    const message: PushRequestMessage = { alert: normalAlert(parsed.data.alert) }
    if (target.target !== undefined) message.target = target.target
    if (parsed.data.ios) message.ios = normalIos(parsed.data.ios)
    if (parsed.data.android) message.android = normalAndroid(parsed.data.android)
    out.push(message)
  })
  if (issues.length > 0) return { ok: false, issues }
  return {
    ok: true,
    request: {
      requestId: request_id,
      campaignKey: campaign_key ?? null,
      targetType: target_type,
      allDevices: target_type === 'customer_id' && all_devices === true,
      messages: out,
    },
  }
}

type TargetResult =
  | { ok: true; target: string | number | CanonicalProfileTarget | undefined }
  | { ok: false; issues: RequestIssue[] }

function checkTarget(type: TargetType, target: unknown, path: string): TargetResult {
  const fail = (message: string): TargetResult => ({ ok: false, issues: [{ path, message }] })
  const absent = target === undefined || target === null
  switch (type) {
    case 'broadcast':
      // Omitted; an empty string is taken for omitted too.
      return absent || target === ''
        ? { ok: true, target: undefined }
        : fail('target must be omitted when target_type is broadcast')
    case 'customer_id': {
      if (absent) return fail('target is required: the customer id')
      // A numeric customer id sent as a JSON number is the same id.
      const id = typeof target === 'number' && Number.isSafeInteger(target) ? String(target) : target
      if (typeof id !== 'string') return fail('target must be a customer id (a string)')
      if (id.trim() === '') return fail('target must not be empty')
      if (Buffer.byteLength(id) > PUSH_LIMITS.customerIdMaxBytes)
        return fail(
          `target: a customer id is at most ${PUSH_LIMITS.customerIdMaxBytes} single-byte characters`,
        )
      return { ok: true, target: id }
    }
    case 'audience_id': {
      if (absent) return fail('target is required: the audience id')
      const id = typeof target === 'string' && /^\d{1,15}$/.test(target) ? Number(target) : target
      if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 1)
        return fail('target must be an audience id (a positive integer)')
      return { ok: true, target: id }
    }
    case 'profile': {
      if (absent) return fail('target is required: {"profile": {"criteria": [...], "op": "and"}}')
      // The audiences' parser: every op of the spec by type, a scalar `values` taken as [value].
      const parsed = parsePushProfileTarget(target, path)
      return parsed.ok ? { ok: true, target: parsed.rules } : { ok: false, issues: parsed.issues }
    }
  }
}

/** zod issues as paths like `messages[0].ios.badge`, under `root`. */
export function zodIssues(error: z.ZodError, root = ''): RequestIssue[] {
  return error.issues.map((issue) => ({ path: joinPath(root, issue.path), message: issue.message }))
}

export function joinPath(root: string, path: readonly PropertyKey[]): string {
  let out = root
  for (const part of path) {
    if (typeof part === 'number') out += `[${part}]`
    else out += out === '' ? String(part) : `.${String(part)}`
  }
  return out
}

/** One line per issue, as the 400's `errors` list. */
export const issueLines = (issues: readonly RequestIssue[]) =>
  issues.map((i) => (i.path === '' ? i.message : `${i.path}: ${i.message}`))
