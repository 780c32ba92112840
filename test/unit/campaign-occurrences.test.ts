import { describe, expect, it } from 'vitest'
import type { CampaignRow } from '../../pipelines/campaigns/campaign-commands.ts'
import { creativeMessage, parseSlotTarget, slotRequest } from '../../pipelines/campaigns/campaign-push.ts'
import { dueOccurrences } from '../../pipelines/campaigns/occurrences.ts'
import type { PushCampaignBody, StoredPushCreative } from '../../schemas/campaigns.ts'

const T = Date.parse('2030-06-01T12:00:00Z')
const MIN = 60_000
const creatives: StoredPushCreative[] = [
  {
    id: 11,
    letter: 'A',
    percent: 50,
    key_values: [{ key: 'k', value: 'v' }],
    build_attributes: { push_message: 'Hi A', push_title: 'T', ll_deep_link_url: 'app://x', sound: 's' },
  },
  { id: 12, letter: 'B', percent: 50, key_values: [], build_attributes: { push_message: 'Hi B' } },
]
const body = (schedule: PushCampaignBody['schedule'], control = 0): PushCampaignBody => ({
  name: 'n',
  status: 'active',
  goal: 'notify',
  audiences: { campaign_type: 'everyone', control_group_percent: control },
  schedule,
  creatives,
})
const row = (over: Partial<CampaignRow> = {}): CampaignRow => ({
  id: 5,
  org_id: 1,
  app_id: 'app',
  channel: 'push',
  name: 'n',
  status: 'active',
  archived: 0,
  deleted: 0,
  body: '',
  max_creative_id: 12,
  activated_at: T - 1000,
  created_at: T - 5000,
  updated_at: T - 1000,
  version: 1,
  ...over,
})

describe('campaign occurrences', () => {
  it('names due occurrences: once, per activation, per recurring date; never late beyond an hour', () => {
    expect(dueOccurrences(row(), body({ begin_immediately: {} }), T).map((d) => [d.key, d.start])).toEqual([
      [`i${T - 1000}`, T - 1000],
    ])
    expect(dueOccurrences(row({ activated_at: null }), body({ begin_immediately: {} }), T)).toEqual([])
    const on = body({ on_schedule: { begin_date: '2030-06-01T11:59:00Z', push_throttle_num_msgs: 7 } })
    expect(dueOccurrences(row(), on, T)).toEqual([
      { key: 'once', start: T - MIN, mode: 'absolute', perMinute: 7, caps: undefined },
    ])
    expect(dueOccurrences(row(), on, T - 2 * MIN)).toEqual([])
    expect(dueOccurrences(row(), on, T + 2 * 3_600_000)).toEqual([])
    const rec = body({
      recurring: {
        begin_date: '2030-05-01T11:30:00Z',
        end_date: '2030-07-01T00:00:00Z',
        intervals: [{ interval: 'daily' }],
        frequency_attributes: [{ name: 'messages_per_days', days: 7, count: 1 }],
      },
    })
    const due = dueOccurrences(row(), rec, T)
    expect(due.map((d) => [d.key, d.start, d.caps])).toEqual([
      ['2030-06-01', T - 30 * MIN, [{ name: 'messages_per_days', days: 7, count: 1 }]],
    ])
    const local = dueOccurrences(
      row(),
      body({
        on_schedule: { begin_date: '2030-06-01T12:00:00', send_local_tz: true, starting_time_zone_id: 25 },
      }),
      T,
    )
    expect(local).toMatchObject([
      { key: 'once', start: T, mode: 'local', wallClock: { hour: 12, minute: 0 } },
    ])
    expect(
      dueOccurrences(row(), body({ optimized: { fallback_time: '2030-06-01T11:00:00Z' } }), T),
    ).toMatchObject([{ key: 'once', start: T - 60 * MIN, mode: 'optimized' }])
  })

  it('builds one deterministic campaign_slot request per slot and creative', () => {
    const r = slotRequest({
      appId: 'app',
      orgId: 1,
      campaignId: 5,
      occurrence: '2030-06-01',
      slot: 3,
      planId: 777,
      creative: creatives[0]!,
      receivedAt: T,
    })
    expect(r).toEqual({
      v: 1,
      requestId: 'campaign:5:2030-06-01:3:A',
      appId: 'app',
      orgId: 1,
      receivedAt: T,
      campaignKey: 'campaign:5',
      targetType: 'campaign_slot',
      allDevices: false,
      messages: [
        {
          target: '777|3|2030-06-01',
          alert: { title: 'T', body: 'Hi A' },
          ios: {
            content_available: true,
            mutable_content: false,
            sound: 's',
            extra: { k: 'v', ll_deep_link_url: 'app://x' },
          },
          android: { extra: { k: 'v', ll_deep_link_url: 'app://x' } },
        },
      ],
      origin: 'campaign',
      campaignId: 5,
      creative: 'A',
    })
    expect(parseSlotTarget('777|3|2030-06-01')).toEqual({ planId: 777, slot: 3, occurrence: '2030-06-01' })
    expect(creativeMessage(creatives[1]!)).toEqual({
      alert: 'Hi B',
      ios: { content_available: true, mutable_content: false },
      android: {},
    })
  })
})
