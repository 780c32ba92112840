import { readFileSync } from 'node:fs'
import { describe, expect, it } from 'vitest'
import {
  savedAudiencesOf,
  validateInappCampaign,
  validatePushCampaign,
} from '../../pipelines/campaigns/validate-campaign.ts'
import { renderCampaign } from '../../pipelines/campaigns/render-campaign.ts'
import { parseTargetRules } from '../../schemas/audiences.ts'

const push = (over: Record<string, unknown> = {}) => ({
  name: ' Promo ',
  status: 'active',
  goal: 'notify',
  audiences: { campaign_type: 'everyone' },
  schedule: { begin_immediately: {} },
  creatives: [{ build_attributes: { push_message: 'Hi' } }],
  ...over,
})
const issues = (input: unknown) => {
  const r = validatePushCampaign(input, parseTargetRules)
  return r.ok ? [] : r.issues.map((i) => `${i.path}: ${i.message}`)
}

describe('campaign validation', () => {
  it('accepts what real clients send: nulls for absent fields, begin_immediately true, devices on push', () => {
    const r = validatePushCampaign(
      push({
        conversion_event: null,
        schedule: { begin_immediately: true, on_schedule: null },
        audiences: { campaign_type: 'everyone', control_group_percent: null, devices: ['phone'] },
        creatives: {
          title: null,
          percent: null,
          key_values: null,
          build_attributes: { push_message: '', sound: null },
        },
      }),
      parseTargetRules,
    )
    expect(r).toEqual({
      ok: true,
      body: {
        name: 'Promo',
        status: 'active',
        goal: 'notify',
        audiences: { campaign_type: 'everyone', control_group_percent: 0, devices: ['phone'] },
        schedule: { begin_immediately: {} },
        creatives: [
          { id: 0, letter: 'A', percent: 100, key_values: [], build_attributes: { push_message: '' } },
        ],
        creatives_as_object: true,
      },
    })
  })

  it('checks conversion filters by operator', () => {
    const filters = (f: unknown[]) =>
      issues(
        push({
          conversion_event: { event_name: 'Buy', conversion_attributes: { filters: f, operator: 'or' } },
        }),
      )
    expect(filters([{ dimension_name: 'Amount', operator: 'between', value: '10,20' }])).toEqual([])
    expect(filters([{ dimension_name: 'Amount', operator: 'between', value: '10' }])).toEqual([
      'conversion_event.conversion_attributes.filters[0].value: of between holds two numbers (an array, or "low,high")',
    ])
    expect(filters([{ dimension_name: 'Amount', operator: 'greater_than', value: 'ten' }])).toEqual([
      'conversion_event.conversion_attributes.filters[0].value: must be a number with operator greater_than',
    ])
    expect(filters([{ dimension_name: 'Plan', operator: 'is_one_of' }])).toEqual([
      'conversion_event.conversion_attributes.filters[0].value: is required with operator is_one_of',
    ])
    expect(filters([{ dimension_name: 'Plan', operator: 'is_defined' }])).toEqual([])
    expect(filters([{ dimension_name: 'Plan', operator: 'is one of', value: 'a' }])[0]).toMatch(
      /^conversion_event\.conversion_attributes\.filters\[0\]\.operator: /,
    )
  })

  it('checks audiences shapes and schedules', () => {
    expect(issues(push({ audiences: { audience_id: 3, target_rules: {} } }))).toEqual([
      'audiences: give audience_id or target_rules, not both',
    ])
    expect(issues(push({ audiences: { campaign_type: 'audience' } }))).toEqual([
      'audiences.audience_id: is required when campaign_type is audience',
    ])
    expect(issues(push({ schedule: {} }))).toEqual([
      'schedule: must hold exactly one of begin_immediately, on_schedule, recurring, optimized',
    ])
    expect(issues(push({ schedule: { on_schedule: { begin_date: '2030-13-45T00:00:00Z' } } }))).toEqual([
      'schedule.on_schedule.begin_date: is not a valid date-time',
    ])
    expect(
      issues(
        push({
          schedule: {
            recurring: {
              begin_date: '2030-01-01T00:00:00Z',
              end_date: '2030-02-01T00:00:00Z',
              intervals: [
                { interval: 'weekly', day_of_week: 'Monday', on_day: 2 },
                { interval: 'monthly', on_day: 32 },
                { interval: 'weekly', on_day: 3 },
              ],
            },
          },
        }),
      ),
    ).toEqual(['schedule.recurring.intervals[1].on_day: of a monthly interval is a day of the month, 1..31'])
    expect(
      issues(
        push({
          creatives: [
            { percent: 60, build_attributes: { push_message: 'a', ll_deep_link_url: 'not a url' } },
            { build_attributes: { push_message: 'b' } },
          ],
        }),
      ),
    ).toEqual(['creatives[0].build_attributes.ll_deep_link_url: must be an absolute URL (scheme://…)'])
    expect(
      issues(
        push({
          creatives: [
            { percent: 60, build_attributes: { push_message: 'a' } },
            { build_attributes: { push_message: 'b' } },
          ],
        }),
      ),
    ).toEqual(['creatives[1].percent: is required when there are several creatives'])
  })

  it('validates the in-app data part: trigger, dates, positions, devices', () => {
    const r = validateInappCampaign(
      {
        name: 'In',
        status: 'draft',
        goal: 'activate',
        audiences: {},
        schedule: { trigger_name: 'session event', event_name: '', begin_date: '2030-01-01' },
        creatives: [{ percent: 100 }],
      },
      parseTargetRules,
    )
    expect(r).toEqual({
      ok: true,
      body: {
        name: 'In',
        status: 'draft',
        goal: 'activate',
        audiences: { campaign_type: 'everyone', control_group_percent: 0, devices: ['phone', 'tablet'] },
        schedule: { trigger_name: 'session event', begin_date: '2030-01-01' },
        creatives: [{ id: 0, letter: 'A', percent: 100, position: 'center', key_values: [] }],
      },
    })
    const bad = validateInappCampaign(
      {
        name: 'In',
        status: 'draft',
        goal: 'activate',
        audiences: { devices: ['watch'] },
        schedule: { begin_date: '2030-01-02T00:00:00Z', end_date: '2030-01-01T00:00:00Z' },
        creatives: [{ percent: 100, position: 'left' }],
      },
      parseTargetRules,
    )
    expect(bad.ok ? [] : bad.issues.map((i) => i.path)).toEqual([
      'audiences.devices[0]',
      'creatives[0].position',
    ])
  })
})

/** The body the original's campaign script posts (test/fixtures/campaign-bodies/README.md). */
const scriptBody = () =>
  JSON.parse(
    readFileSync(new URL('../fixtures/campaign-bodies/campaigns-api-script.json', import.meta.url), 'utf8'),
  ) as Record<string, unknown>

describe('saved audiences as the original sends them', () => {
  it('stores the script body as saved_audience with target_rules.audiences, and answers it as sent', () => {
    const r = validatePushCampaign(scriptBody(), parseTargetRules)
    expect(r).toEqual({
      ok: true,
      body: {
        name: 'Dashboard Campaign Name - campaigns API',
        status: 'draft',
        goal: 'notify',
        conversion_event: { event_name: 'Localytics Push Opened' },
        audiences: { campaign_type: 'saved_audience', control_group_percent: 5, audience_ids: [123456] },
        schedule: { on_schedule: { begin_date: '2026-04-01T17:00:00.000Z' } },
        creatives: [
          {
            id: 0,
            letter: 'A',
            title: 'Default Dasboard Creative Name',
            percent: 100,
            key_values: [],
            build_attributes: { push_title: 'Hello!', push_message: 'Push message body' },
          },
        ],
      },
    })
    if (!r.ok) return
    expect(savedAudiencesOf(r.body.audiences)).toEqual([
      { id: 123456, path: 'audiences.target_rules.audiences[0]' },
    ])
    const answer = renderCampaign({ id: 7, channel: 'push', body: JSON.stringify(r.body) })
    expect(answer.audiences).toEqual({
      campaign_type: 'saved_audience',
      control_group_percent: 5,
      target_rules: { audiences: [123456] },
    })
  })

  it('takes several saved audiences, the old spellings as aliases, and names the path of what is wrong', () => {
    const audiences = (a: unknown) => {
      const r = validatePushCampaign(push({ audiences: a }), parseTargetRules)
      return r.ok ? r.body.audiences : r.issues.map((i) => `${i.path}: ${i.message}`)
    }
    expect(audiences({ campaign_type: 'saved_audience', target_rules: { audiences: [4, 9] } })).toEqual({
      campaign_type: 'saved_audience',
      control_group_percent: 0,
      audience_ids: [4, 9],
    })
    // Aliases: `audience` with target_rules.audiences, saved_audience with audience_id, no type at all.
    expect(audiences({ campaign_type: 'audience', target_rules: { audiences: [4] } })).toEqual({
      campaign_type: 'audience',
      control_group_percent: 0,
      audience_ids: [4],
    })
    expect(audiences({ campaign_type: 'saved_audience', audience_id: 4 })).toEqual({
      campaign_type: 'saved_audience',
      control_group_percent: 0,
      audience_id: 4,
    })
    expect(audiences({ target_rules: { audiences: [4] } })).toMatchObject({
      campaign_type: 'saved_audience',
      audience_ids: [4],
    })
    expect(audiences({ campaign_type: 'saved_audience' })).toEqual([
      'audiences.target_rules.audiences: is required when campaign_type is saved_audience (the ids of saved audiences)',
    ])
    expect(audiences({ campaign_type: 'saved_audience', target_rules: { audiences: [] } })).toEqual([
      'audiences.target_rules.audiences: must name at least one audience',
    ])
    expect(audiences({ campaign_type: 'saved_audience', target_rules: { audiences: [4, 'x'] } })).toEqual([
      'audiences.target_rules.audiences[1]: Invalid input: expected number, received string',
    ])
    expect(
      audiences({
        campaign_type: 'saved_audience',
        target_rules: { audiences: [4], profile: { operator: 'and', criteria: [] } },
      }),
    ).toEqual([
      'audiences.target_rules.profile: cannot be combined with audiences: target saved audiences or give rules, not both',
    ])
    expect(
      audiences({
        campaign_type: 'saved_audience',
        target_rules: { profile: { operator: 'and', criteria: [] } },
      }),
    ).toEqual([
      'audiences.target_rules.audiences: is required when campaign_type is saved_audience (the ids of saved audiences)',
      'audiences.target_rules: must name saved audiences ({"audiences": [id, …]}) when campaign_type is saved_audience',
    ])
    expect(audiences({ campaign_type: 'target_rules', target_rules: { audiences: [4] } })).toEqual([
      'audiences.target_rules.audiences: must be absent when campaign_type is target_rules (inline rules): use saved_audience',
    ])
  })

  it('applies to in-app campaigns too, devices kept', () => {
    const r = validateInappCampaign(
      {
        name: 'In',
        status: 'draft',
        goal: 'activate',
        audiences: {
          campaign_type: 'saved_audience',
          control_group_percent: 5,
          target_rules: { audiences: [3, 8] },
          devices: ['phone'],
        },
        schedule: { begin_date: '2030-01-01T00:00:00Z' },
        creatives: [{ percent: 100 }],
      },
      parseTargetRules,
    )
    expect(r.ok && r.body.audiences).toEqual({
      campaign_type: 'saved_audience',
      control_group_percent: 5,
      audience_ids: [3, 8],
      devices: ['phone'],
    })
    if (!r.ok) return
    const answer = renderCampaign({
      id: 9,
      channel: 'inapp',
      body: JSON.stringify({ ...r.body, assets: {} }),
    })
    expect(answer.audiences).toEqual({
      campaign_type: 'saved_audience',
      control_group_percent: 5,
      target_rules: { audiences: [3, 8] },
      devices: ['phone'],
    })
  })
})

describe('recurring intervals as clients send them', () => {
  const recurring = (intervals: unknown[]) =>
    validatePushCampaign(
      push({
        schedule: {
          recurring: { begin_date: '2030-01-01T09:00:00Z', end_date: '2030-03-01T09:00:00Z', intervals },
        },
      }),
      parseTargetRules,
    )
  const stored = (intervals: unknown[]) => {
    const r = recurring(intervals)
    if (!r.ok) return r.issues.map((i) => `${i.path}: ${i.message}`)
    return 'recurring' in r.body.schedule ? r.body.schedule.recurring.intervals : undefined
  }

  it('lets day_of_week decide a weekly day and keeps on_day as sent', () => {
    expect(stored([{ interval: 'weekly', day_of_week: 'sunday', on_day: 1 }])).toEqual([
      { interval: 'weekly', day_of_week: 'sunday', on_day: 1 },
    ])
    expect(stored([{ interval: 'weekly', day_of_week: 'Monday', on_day: 40 }])).toEqual([
      { interval: 'weekly', day_of_week: 'monday', on_day: 40 },
    ])
    // The answer echoes on_day and names each interval's first occurrence by day_of_week:
    // 2030-01-06 is the first Sunday from 2030-01-01.
    const r = recurring([{ interval: 'weekly', day_of_week: 'sunday', on_day: 1 }])
    expect(r.ok).toBe(true)
    if (!r.ok) return
    const answer = renderCampaign({ id: 1, channel: 'push', body: JSON.stringify(r.body) }) as {
      schedule: { recurring: { intervals: unknown[] } }
    }
    expect(answer.schedule.recurring.intervals).toEqual([
      { interval: 'weekly', day_of_week: 'sunday', on_day: 1, interval_start: '2030-01-06T09:00:00.000Z' },
    ])
  })

  it('reads on_day only where no day_of_week is given', () => {
    expect(stored([{ interval: 'weekly', on_day: 0 }])).toEqual([
      { interval: 'weekly', day_of_week: 'sunday', on_day: 0 },
    ])
    expect(stored([{ interval: 'weekly', on_day: 7 }])).toEqual([
      { interval: 'weekly', day_of_week: 'sunday', on_day: 7 },
    ])
    expect(stored([{ interval: 'weekly', on_day: 3 }])).toEqual([
      { interval: 'weekly', day_of_week: 'wednesday', on_day: 3 },
    ])
    expect(stored([{ interval: 'weekly', on_day: 8 }])).toEqual([
      'schedule.recurring.intervals[0].on_day: of a weekly interval without day_of_week is a day of the week, 0 or 7 (sunday), 1 (monday)..6',
    ])
    expect(stored([{ interval: 'weekly' }])).toEqual([
      'schedule.recurring.intervals[0].day_of_week: is required for a weekly interval',
    ])
    expect(
      stored([
        { interval: 'monthly', on_day: 15, day_of_week: 'friday' },
        { interval: 'daily', on_day: 2 },
      ]),
    ).toEqual([
      { interval: 'monthly', day_of_week: 'friday', on_day: 15 },
      { interval: 'daily', on_day: 2 },
    ])
  })
})
