import { describe, expect, it } from 'vitest'
import { parseAudienceBody } from '../../pipelines/audiences/audience-body.ts'
import type { AudienceRow } from '../../pipelines/audiences/audience-commands.ts'
import {
  answeredRules,
  audienceBody,
  detailBody,
  listItem,
  segmentationBody,
} from '../../pipelines/audiences/audience-views.ts'

const RULES = {
  behavior_profile_operator: 'and',
  targeting_type: 'install_id',
  behavior: {
    days: 30,
    behavior_rule_operator: 'and',
    rules: [
      {
        rule_type: 'event',
        event_name: 'purchase',
        count: 1,
        count_operator: 'at_least',
        conditions: {
          operator: 'and',
          filters: [{ dimension_name: 'category', operator: 'is one of', value: 'shoes' }],
        },
      },
    ],
  },
  profile: {
    operator: 'or',
    criteria: [
      { key: 'tier', scope: 'app', date_type: 'string', operator: 'is one of', values: ['gold'] },
      { key: 'vip', scope: 'org', operator: 'is defined' },
    ],
  },
}

describe('parseAudienceBody', () => {
  it('a create takes the name trimmed and both forms of the rules', () => {
    const parsed = parseAudienceBody({ name: '  Gold  ', target_rules: RULES, extra: 1 }, 'create')
    expect(parsed.ok).toBe(true)
    if (!parsed.ok) return
    expect(parsed.name).toBe('Gold')
    expect(parsed.rules?.given).toBe(RULES)
    // Canonical: spellings normalised, a filter's scalar value as values.
    expect(parsed.rules?.canonical).toMatchObject({
      behavior: { rules: [{ conditions: { filters: [{ operator: 'is_one_of', values: ['shoes'] }] } }] },
      profile: {
        operator: 'or',
        criteria: [
          { key: 'tier', operator: 'is_one_of' },
          { key: 'vip', scope: 'org' },
        ],
      },
    })
  })

  it('a body that is not an object is malformed (400); a broken field is 422 with its JSON path', () => {
    expect(parseAudienceBody([1], 'create')).toEqual({
      ok: false,
      status: 400,
      issues: [{ path: '', message: 'the body must be a JSON object' }],
    })
    expect(parseAudienceBody(null, 'change')).toMatchObject({ ok: false, status: 400 })
    const broken = parseAudienceBody(
      { name: 'x'.repeat(201), target_rules: { behavior: { rules: [{ rule_type: 'event', count: -1 }] } } },
      'create',
    )
    expect(broken.ok).toBe(false)
    if (broken.ok) return
    expect(broken.status).toBe(422)
    expect(broken.issues.map((i) => i.path)).toEqual(
      expect.arrayContaining([
        'name',
        'target_rules.behavior.rules[0].count',
        'target_rules.behavior.rules[0].event_name',
      ]),
    )
    expect(broken.issues[0]).toEqual({ path: 'name', message: 'name must be at most 200 characters' })
  })

  it('create and replace need name and target_rules; a change needs one of them', () => {
    expect(parseAudienceBody({}, 'replace')).toEqual({
      ok: false,
      status: 422,
      issues: [
        { path: 'name', message: 'name is required' },
        { path: 'target_rules', message: 'target_rules is required' },
      ],
    })
    expect(parseAudienceBody({ name: '   ' }, 'change')).toEqual({
      ok: false,
      status: 422,
      issues: [{ path: 'name', message: 'name must not be empty' }],
    })
    expect(parseAudienceBody({ name: 7 }, 'change')).toMatchObject({
      issues: [{ path: 'name', message: 'name must be a string' }],
    })
    expect(parseAudienceBody({}, 'change')).toMatchObject({
      status: 422,
      issues: [{ path: '', message: 'a PATCH changes name or target_rules: give at least one' }],
    })
    expect(parseAudienceBody({ name: 'Only the name' }, 'change')).toEqual({
      ok: true,
      name: 'Only the name',
    })
  })
})

describe('audience views', () => {
  const row: AudienceRow = {
    id: 12,
    org_id: 1,
    app_id: 'app',
    name: 'Gold',
    target_rules: '{}',
    target_rules_given: JSON.stringify(RULES),
    created_at: Date.UTC(2026, 0, 2, 3, 4, 5, 6),
    updated_at: Date.UTC(2026, 0, 3),
    deleted_at: null,
    version: 9,
  }
  const counts = {
    audience_id: 12,
    user_count: 10,
    has_push: 4,
    seen_last_thirty: 7,
    calculated_at: Date.UTC(2026, 0, 4),
    requested_at: 0,
    audience_version: 9,
  }
  const answered = {
    ...RULES,
    profile: {
      operator: 'or',
      criteria: [
        { key: 'tier', values: ['gold'], operator: 'is one of' },
        { key: 'vip', operator: 'is defined' },
      ],
    },
  }

  it('answer the rules as given, each profile criterion cut to key, values and operator', () => {
    expect(answeredRules(RULES)).toEqual(answered)
    expect(answeredRules({ behavior_profile_operator: 'and' })).toEqual({ behavior_profile_operator: 'and' })
  })

  it('shape the Audience, list item, detail and segmentation result as the spec’s tables', () => {
    expect(audienceBody({ ...row, target_rules_given: RULES }, counts)).toEqual({
      id: 12,
      name: 'Gold',
      created_at: '2026-01-02T03:04:05.006Z',
      target_rules: answered,
      segmentation_count: { user_count: 10, has_push: 4, seen_last_thirty: 7 },
    })
    expect(listItem(row, counts)).toEqual({
      id: 12,
      name: 'Gold',
      created_at: '2026-01-02T03:04:05.006Z',
      updated_at: '2026-01-03T00:00:00.000Z',
      deleted_at: null,
      target_rules: answered,
      segmentation_count: {
        user_count: 10,
        has_push: 4,
        seen_last_thirty: 7,
        updated_at: '2026-01-04T00:00:00.000Z',
      },
    })
    expect(detailBody(row, counts)).toEqual({
      segmentation_id: '12',
      user_count: 10,
      has_push: 4,
      seen_last_thirty: 7,
      updated_at: '2026-01-04T00:00:00.000Z',
      target_rules: answered,
    })
    expect(segmentationBody(12, counts)).toEqual({
      segmentation_id: 12,
      user_count: 10,
      has_push: 4,
      seen_last_thirty: 7,
      last_calculated_on: '2026-01-04T00:00:00.000Z',
    })
  })

  it('before the first count: zeros and null times', () => {
    expect(segmentationBody(3, undefined)).toEqual({
      segmentation_id: 3,
      user_count: 0,
      has_push: 0,
      seen_last_thirty: 0,
      last_calculated_on: null,
    })
    expect(listItem(row, undefined).segmentation_count).toEqual({
      user_count: 0,
      has_push: 0,
      seen_last_thirty: 0,
      updated_at: null,
    })
  })
})
