import { hash } from 'node:crypto'
import type { StoredFrequency } from '../../schemas/campaigns.ts'

/**
 * A/B and control assignment by a stable hash of (campaign, install): the same install always
 * gets the same variant of a campaign, on every worker, in every occurrence, with no state.
 * Bytes 0–3 of SHA-256("<campaign>:<install>") decide the control group (the install is held out
 * when they fall in the first control_group_percent of the range), bytes 4–7 the creative (by
 * cumulative percent). Two independent draws, so the creatives split the non-control members
 * in their percents whatever the control group's size.
 */
export const CONTROL = 'control'

const RANGE = 0x1_0000_0000

export function variantOf(
  campaignId: number,
  installUuid: string,
  controlPercent: number,
  creatives: readonly { letter: string; percent: number }[],
): string {
  // One-shot hash: a third of createHash's cost, which counts for a million members.
  const digest = hash('sha256', `${campaignId}:${installUuid}`, 'buffer')
  const control = digest.readUInt32BE(0) / RANGE
  if (control < controlPercent / 100) return CONTROL
  const draw = (digest.readUInt32BE(4) / RANGE) * 100
  let cumulative = 0
  for (const c of creatives) {
    cumulative += c.percent
    if (draw < cumulative) return c.letter
  }
  // Percents sum to 100 (validated); rounding cannot reach here, but a last creative is the safe answer.
  return creatives.at(-1)?.letter ?? CONTROL
}

const DAY_MS = 86_400_000

/**
 * Frequency caps of one install (docs/campaigns.md, "Frequency caps"): with the times of the
 * campaign's earlier messages to it (pushes due, or in-app impressions), may it get one at `at`?
 * Each `messages_per_days` item allows at most `count` messages in any `days` days (the one at
 * `at` included), and `messages_atleast_days_apart` days between two messages.
 */
export function capAllows(
  caps: readonly StoredFrequency[] | undefined,
  previous: readonly number[],
  at: number,
): boolean {
  if (!caps || caps.length === 0) return true
  for (const cap of caps) {
    const since = at - cap.days * DAY_MS
    const inWindow = previous.filter((t) => t > since && t <= at).length
    if (inWindow + 1 > cap.count) return false
    const apart = cap.messages_atleast_days_apart ?? 0
    if (apart > 0 && previous.some((t) => t > at - apart * DAY_MS && t <= at)) return false
  }
  return true
}

/** How far back frequency caps look (ms): the longest window of any cap. */
export const capLookbackMs = (caps: readonly StoredFrequency[] | undefined) =>
  Math.max(0, ...(caps ?? []).map((c) => Math.max(c.days, c.messages_atleast_days_apart ?? 0))) * DAY_MS
