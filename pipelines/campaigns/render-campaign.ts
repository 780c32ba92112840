import type {
  Channel,
  InappCampaignBody,
  PushCampaignBody,
  StoredAudiences,
  StoredPushSchedule,
} from '../../schemas/campaigns.ts'
import { intervalStart } from './schedule-time.ts'

/**
 * A stored campaign as the API answers it (create, get, update, archive): the spec's fields, `id`
 * first, creatives with their `id` and `letter`, recurring intervals with `interval_start`;
 * nothing Sluice keeps for itself (stored assets, the shape flag).
 */
export function renderCampaign(row: { id: number; channel: Channel; body: string }): Record<string, unknown> {
  const body = JSON.parse(row.body) as PushCampaignBody | InappCampaignBody
  const { creatives_as_object, ...rest } = body
  const { assets: _assets, ...visible } = rest as typeof rest & { assets?: unknown }
  const schedule =
    row.channel === 'push' ? renderPushSchedule(body.schedule as StoredPushSchedule) : body.schedule
  const creatives = creatives_as_object ? body.creatives[0] : body.creatives
  return { id: row.id, ...visible, audiences: renderAudiences(body.audiences), schedule, creatives }
}

/** Saved audiences named in `target_rules.audiences` are answered there, as the client sent them. */
function renderAudiences(audiences: StoredAudiences): Record<string, unknown> {
  const { audience_ids, ...rest } = audiences
  if (!audience_ids) return rest
  const { devices, ...head } = rest
  return { ...head, target_rules: { audiences: audience_ids }, ...(devices && { devices }) }
}

function renderPushSchedule(schedule: StoredPushSchedule): StoredPushSchedule {
  if (!('recurring' in schedule)) return schedule
  const r = schedule.recurring
  return {
    recurring: {
      ...r,
      intervals: r.intervals.map((i) => {
        const start = intervalStart(r, i)
        return { ...i, ...(start && { interval_start: start }) }
      }),
    },
  }
}
