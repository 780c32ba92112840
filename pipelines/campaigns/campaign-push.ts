import type { StoredPushCreative } from '../../schemas/campaigns.ts'
import type { PushRequestMessage, PushRequestRecord } from '../../schemas/push.ts'
import { campaignKey } from './campaign-reader.ts'
import { slotRequestId } from './occurrences.ts'

/**
 * The push request of one dispatch slot of an occurrence for one creative (pure): a
 * `campaign_slot` record whose installs the push planner reads from the occurrence's plan
 * (slot-targets.ts). Its request id is deterministic, so a slot dispatched twice (two
 * executors, a crash before the dispatch was recorded) is planned once by the push pipeline.
 */
export function slotRequest(o: {
  appId: string
  orgId: number
  campaignId: number
  occurrence: string
  slot: number
  planId: number
  creative: StoredPushCreative
  receivedAt: number
  /** The slot's moment, when it is handed over ahead of it. */
  notBefore?: number
}): PushRequestRecord {
  return {
    v: 1,
    requestId: slotRequestId(o.campaignId, o.occurrence, o.slot, o.creative.letter),
    appId: o.appId,
    orgId: o.orgId,
    receivedAt: o.receivedAt,
    campaignKey: campaignKey(o.campaignId),
    targetType: 'campaign_slot',
    allDevices: false,
    messages: [{ target: slotTarget(o.occurrence, o.slot, o.planId), ...creativeMessage(o.creative) }],
    origin: 'campaign',
    campaignId: o.campaignId,
    creative: o.creative.letter,
    ...(o.notBefore !== undefined && { notBefore: o.notBefore }),
  }
}

/** What a slot's message targets: `<plan id>|<slot>|<occurrence>` (the occurrence key last: it is free text). */
export const slotTarget = (occurrence: string, slot: number, planId: number) =>
  `${planId}|${slot}|${occurrence}`

export function parseSlotTarget(
  target: unknown,
): { planId: number; slot: number; occurrence: string } | undefined {
  if (typeof target !== 'string') return undefined
  const m = /^(\d+)\|(\d+)\|(.+)$/.exec(target)
  if (!m) return undefined
  return { planId: Number(m[1]), slot: Number(m[2]), occurrence: m[3]! }
}

/**
 * A creative as a push message: the alert (title, subtitle and body, or the body alone), the
 * sound and category on iOS, and the deep link and key/values as extras on both platforms.
 */
export function creativeMessage(c: StoredPushCreative): Omit<PushRequestMessage, 'target'> {
  const b = c.build_attributes
  const extra: Record<string, unknown> = {}
  for (const { key, value } of c.key_values) extra[key] = value
  if (b.ll_deep_link_url) extra.ll_deep_link_url = b.ll_deep_link_url
  const hasExtra = Object.keys(extra).length > 0
  const alert =
    b.push_title !== undefined && b.push_title !== ''
      ? { title: b.push_title, ...(b.push_subtitle && { subtitle: b.push_subtitle }), body: b.push_message }
      : b.push_message
  return {
    alert,
    ios: {
      content_available: true,
      mutable_content: false,
      ...(b.sound && { sound: b.sound }),
      ...(b.push_category && { category: b.push_category }),
      ...(hasExtra && { extra }),
    },
    android: { ...(hasExtra && { extra }) },
  }
}
