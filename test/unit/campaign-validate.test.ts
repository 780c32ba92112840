import { describe, expect, it } from 'vitest'
import { validateInappCampaign, validatePushCampaign } from '../../pipelines/campaigns/validate-campaign.ts'
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
    ).toEqual([
      'schedule.recurring.intervals[0].on_day: says tuesday but day_of_week says monday',
      'schedule.recurring.intervals[1].on_day: of a monthly interval is a day of the month, 1..31',
    ])
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
