import { describe, expect, it } from 'vitest'
import {
  AUDIENCE_LIMITS,
  COUNT_OPERATORS,
  CRITERION_OPERATORS,
  FILTER_OPERATORS,
  RULE_TYPES,
  parsePushProfileTarget,
  parseTargetRules,
  profileOnlyRules,
  type TargetRules,
} from '../../schemas/audiences.ts'

/** The target_rules of the spec's example shapes, as a real client sends them. */
const specShaped = {
  behavior_profile_operator: 'and',
  targeting_type: 'install_id',
  behavior: {
    days: 30,
    behavior_rule_operator: 'and',
    rules: [
      {
        count: 3,
        count_operator: 'less_than',
        event_name: 'Purchase',
        rule_type: 'not-event',
        conditions: {
          filters: [{ dimension_name: 'item', operator: 'is one of', value: 'shoes' }],
          operator: 'and',
        },
        neg_time_window: [-14, -7],
      },
    ],
  },
  profile: {
    criteria: [
      { key: 'plan', scope: 'app', date_type: 'date', operator: 'is defined', values: [] },
      { key: 'tier', scope: 'app', operator: 'is one of', values: ['gold', 'silver'] },
    ],
    operator: 'or',
  },
}

function ok(input: unknown): TargetRules {
  const r = parseTargetRules(input)
  if (!r.ok) throw new Error(`expected ok, got ${JSON.stringify(r.issues)}`)
  return r.rules
}

function issues(input: unknown) {
  const r = parseTargetRules(input)
  if (r.ok) throw new Error(`expected issues, got ${JSON.stringify(r.rules)}`)
  return r.issues
}

const withRule = (rule: object) => ({ behavior: { days: 7, rules: [rule] } })
const withFilter = (filter: object) => withRule({ event_name: 'E', conditions: { filters: [filter] } })
const withCriterion = (criterion: object) => ({ profile: { criteria: [criterion] } })

describe('parseTargetRules: the canonical form', () => {
  it('normalises the spec-shaped rules', () => {
    expect(ok(specShaped)).toEqual({
      behavior_profile_operator: 'and',
      targeting_type: 'install_id',
      behavior: {
        days: 30,
        behavior_rule_operator: 'and',
        rules: [
          {
            rule_type: 'not-event',
            event_name: 'Purchase',
            count: 3,
            count_operator: 'less_than',
            conditions: {
              operator: 'and',
              filters: [{ dimension_name: 'item', operator: 'is_one_of', values: ['shoes'] }],
            },
            neg_time_window: [14, 7],
          },
        ],
      },
      profile: {
        operator: 'or',
        criteria: [
          { key: 'plan', scope: 'app', date_type: 'date', operator: 'is_defined', values: [] },
          {
            key: 'tier',
            scope: 'app',
            date_type: 'string',
            operator: 'is_one_of',
            values: ['gold', 'silver'],
          },
        ],
      },
    })
  })

  it('fills defaults for absent and null optional fields', () => {
    const rules = ok({
      behavior_profile_operator: null,
      targeting_type: null,
      behavior: {
        days: null,
        behavior_rule_operator: null,
        rules: [
          {
            event_name: 'Open',
            rule_type: null,
            count: null,
            count_operator: null,
            conditions: null,
            neg_time_window: null,
          },
        ],
      },
      profile: null,
    })
    expect(rules).toEqual({
      behavior_profile_operator: 'and',
      targeting_type: 'install_id',
      behavior: {
        days: AUDIENCE_LIMITS.defaultDays,
        behavior_rule_operator: 'and',
        rules: [
          {
            rule_type: 'event',
            event_name: 'Open',
            count: null,
            count_operator: 'at_least',
            conditions: { operator: 'and', filters: [] },
            neg_time_window: null,
          },
        ],
      },
      profile: null,
    })
  })

  it('treats an empty behavior or profile part as absent, and {} as everyone', () => {
    expect(ok({ behavior: { days: 3, rules: [] }, profile: { criteria: [] } })).toMatchObject({
      behavior: null,
      profile: null,
    })
    expect(ok({})).toEqual({
      behavior_profile_operator: 'and',
      targeting_type: 'install_id',
      behavior: null,
      profile: null,
    })
  })

  it('drops unknown fields', () => {
    const rules = ok({ ...specShaped, extra: 1, behavior: { ...specShaped.behavior, colour: 'red' } })
    expect(rules).not.toHaveProperty('extra')
    expect(rules.behavior).not.toHaveProperty('colour')
  })

  it.each([
    ['AND', 'and'],
    [' Or ', 'or'],
    ['&&', 'and'],
    ['any', 'or'],
  ])('group operator %j is %s', (sent, canonical) => {
    const rules = ok({ ...specShaped, behavior_profile_operator: sent })
    expect(rules.behavior_profile_operator).toBe(canonical)
  })

  it.each([
    ['event', 'event'],
    ['Event', 'event'],
    ['not-event', 'not-event'],
    ['not_event', 'not-event'],
    ['NOT EVENT', 'not-event'],
    ['no-event', 'not-event'],
    ['session', 'session'],
    ['sessions', 'session'],
    ['no_session', 'not-session'],
    ['not-session', 'not-session'],
    ['first_session', 'first-session'],
    ['new user', 'first-session'],
  ])('rule_type %j is %s', (sent, canonical) => {
    const isEvent = canonical.endsWith('event')
    const rules = ok(withRule({ rule_type: sent, ...(isEvent ? { event_name: 'E' } : {}) }))
    expect(rules.behavior?.rules[0]?.rule_type).toBe(canonical)
    expect(rules.behavior?.rules[0]?.event_name).toBe(isEvent ? 'E' : null)
  })

  it.each([
    ['less_than', 'less_than'],
    ['less than', 'less_than'],
    ['LT', 'less_than'],
    ['<', 'less_than'],
    ['greater-than', 'greater_than'],
    ['exactly', 'exactly'],
    ['equals', 'exactly'],
    ['at least', 'at_least'],
    ['>=', 'at_least'],
    ['at_most', 'at_most'],
    ['<=', 'at_most'],
  ])('count_operator %j is %s', (sent, canonical) => {
    const rules = ok(withRule({ event_name: 'E', count: 2, count_operator: sent }))
    expect(rules.behavior?.rules[0]).toMatchObject({ count: 2, count_operator: canonical })
  })

  it('takes a count sent as integer text', () => {
    expect(ok(withRule({ event_name: 'E', count: '4' })).behavior?.rules[0]?.count).toBe(4)
    expect(ok({ behavior: { days: '10', rules: [{ event_name: 'E' }] } }).behavior?.days).toBe(10)
  })

  it.each([
    ['is one of', 'is_one_of'],
    ['is_one_of', 'is_one_of'],
    ['IS ONE OF', 'is_one_of'],
    ['in', 'is_one_of'],
    ['is not one of', 'is_not_one_of'],
    ['is_not_one_of', 'is_not_one_of'],
    ['not_in', 'is_not_one_of'],
    ['contains', 'contains'],
    ['does not contain', 'does_not_contain'],
    ['does_not_contain', 'does_not_contain'],
    ['greater than', 'greater_than'],
    ['greater_than', 'greater_than'],
    ['less than', 'less_than'],
    ['>=', 'greater_than_or_equal'],
    ['<=', 'less_than_or_equal'],
    ['between', 'between'],
    ['is defined', 'is_defined'],
    ['is_defined', 'is_defined'],
    ['is not defined', 'is_not_defined'],
    ['is_not_defined', 'is_not_defined'],
  ])('filter operator %j is %s', (sent, canonical) => {
    const count = canonical === 'between' ? 2 : canonical.endsWith('defined') ? 0 : 1
    const values = ['1', '5'].slice(0, count)
    const f = ok(withFilter({ dimension_name: 'x', operator: sent, values })).behavior?.rules[0]?.conditions
      .filters[0]
    expect(f).toEqual({ dimension_name: 'x', operator: canonical, values })
  })

  it('takes a filter value as `value` or `values`, scalar or array, numbers as text', () => {
    const filterOf = (f: object) => ok(withFilter(f)).behavior?.rules[0]?.conditions.filters[0]
    expect(filterOf({ dimension_name: 'x', operator: 'is one of', value: 'a' })?.values).toEqual(['a'])
    expect(filterOf({ dimension_name: 'x', operator: 'is one of', values: 'a' })?.values).toEqual(['a'])
    expect(filterOf({ dimension_name: 'x', operator: 'is one of', values: [1, 'b', true] })?.values).toEqual([
      '1',
      'b',
      'true',
    ])
    expect(filterOf({ dimension_name: 'x', operator: 'is defined', values: ['ignored'] })?.values).toEqual([])
  })

  it('orders the bounds of between, numerically for numbers', () => {
    const filterOf = (values: unknown[]) =>
      ok(withFilter({ dimension_name: 'x', operator: 'between', values })).behavior?.rules[0]?.conditions
        .filters[0]?.values
    expect(filterOf(['10', 9])).toEqual(['9', '10'])
    expect(filterOf(['b', 'a'])).toEqual(['a', 'b'])
  })

  it('names device dimensions canonically and keeps attribute names as sent', () => {
    const dims = ok(
      withRule({
        event_name: 'E',
        conditions: {
          filters: ['Country', 'app_ver', 'OS_VER', 'time zone', 'Level', 'attributes.country'].map((d) => ({
            dimension_name: d,
            operator: 'is defined',
          })),
        },
      }),
    ).behavior?.rules[0]?.conditions.filters.map((f) => f.dimension_name)
    expect(dims).toEqual([
      'country',
      'app_version',
      'os_version',
      'device_timezone',
      'Level',
      'attributes.country',
    ])
  })

  it('normalises neg_time_window to [from, to] days ago with from >= to', () => {
    const win = (w: unknown) =>
      ok(withRule({ event_name: 'E', neg_time_window: w })).behavior?.rules[0]?.neg_time_window
    expect(win([-30, -7])).toEqual([30, 7])
    expect(win([7, 30])).toEqual([30, 7])
    expect(win([0, 1])).toEqual([1, 0])
  })

  it.each([
    ['is defined', [], 'string', 'is_defined', []],
    ['is one of', 'gold', 'string', 'is_one_of', ['gold']],
    ['is not one of', ['a', 'b'], 'string', 'is_not_one_of', ['a', 'b']],
    ['contains', 'ol', 'string', 'contains', ['ol']],
    ['greater than', 5, 'number', 'greater_than', ['5']],
    ['less than', '2.5', 'number', 'less_than', ['2.5']],
    ['between', [10, 1], 'number', 'between', ['1', '10']],
    ['greater than', 'm', 'string', 'greater_than', ['m']],
    ['before', '2024-03-01', 'date', 'before', ['2024-03-01']],
    ['after', '2024-03-01T23:30:00-05:00', 'date', 'after', ['2024-03-01']],
    ['within the last', 7, 'date', 'within_last_days', ['7']],
    ['is_not_defined', null, 'string', 'is_not_defined', []],
  ])('criterion %j %j infers date_type %s', (op, values, dateType, operator, canonical) => {
    const c = ok(withCriterion({ key: ' k ', operator: op, values })).profile?.criteria[0]
    expect(c).toEqual({ key: 'k', scope: 'app', date_type: dateType, operator, values: canonical })
  })

  it.each([
    ['app', 'app'],
    ['App', 'app'],
    ['ServiceApplication', 'app'],
    ['org', 'org'],
    ['Organization', 'org'],
    [null, 'app'],
  ])('scope %j is %s', (scope, canonical) => {
    expect(ok(withCriterion({ key: 'k', scope, operator: 'is defined' })).profile?.criteria[0]?.scope).toBe(
      canonical,
    )
  })

  it.each([
    ['date', 'date'],
    ['Date', 'date'],
    ['int', 'number'],
    ['integer', 'number'],
    ['number', 'number'],
    ['string', 'string'],
  ])('date_type %j is %s', (dateType, canonical) => {
    const c = ok(
      withCriterion({ key: 'k', date_type: dateType, operator: 'is one of', values: ['2024-01-02'] }),
    ).profile?.criteria[0]
    expect(c?.date_type).toBe(canonical)
  })

  it('normalises date values of a date criterion to YYYY-MM-DD', () => {
    const c = ok(
      withCriterion({
        key: 'k',
        date_type: 'date',
        operator: 'between',
        values: ['2024-05-01T10:00Z', '2024-01-31'],
      }),
    ).profile?.criteria[0]
    expect(c?.values).toEqual(['2024-01-31', '2024-05-01'])
  })

  it('exports the full value sets', () => {
    expect(RULE_TYPES).toEqual(['event', 'not-event', 'session', 'not-session', 'first-session'])
    expect(COUNT_OPERATORS).toEqual(['less_than', 'greater_than', 'exactly', 'at_least', 'at_most'])
    expect(CRITERION_OPERATORS).toEqual([...FILTER_OPERATORS, 'before', 'after', 'within_last_days'])
  })
})

describe('parseTargetRules: issues name the JSON path', () => {
  it.each([
    ['not an object', 'x', 'target_rules', /must be an object/],
    [
      'unknown group operator',
      { behavior_profile_operator: 'xor' },
      'target_rules.behavior_profile_operator',
      /unknown/,
    ],
    ['unknown targeting_type', { targeting_type: 'email' }, 'target_rules.targeting_type', /install_id/],
    ['behavior not an object', { behavior: [] }, 'target_rules.behavior', /must be an object/],
    [
      'days above the maximum',
      { behavior: { days: 366, rules: [] } },
      'target_rules.behavior.days',
      /at most 365/,
    ],
    ['days of 0', { behavior: { days: 0, rules: [] } }, 'target_rules.behavior.days', /at least 1/],
    ['days not an integer', { behavior: { days: 1.5, rules: [] } }, 'target_rules.behavior.days', /integer/],
    ['rules not an array', { behavior: { rules: {} } }, 'target_rules.behavior.rules', /array/],
    [
      'too many rules',
      {
        behavior: {
          rules: Array.from({ length: AUDIENCE_LIMITS.maxRules + 1 }, () => ({ event_name: 'E' })),
        },
      },
      'target_rules.behavior.rules',
      /at most 20 rules/,
    ],
    [
      'unknown rule_type',
      withRule({ rule_type: 'purchase' }),
      'target_rules.behavior.rules[0].rule_type',
      /unknown/,
    ],
    [
      'count below 0',
      withRule({ event_name: 'E', count: -1 }),
      'target_rules.behavior.rules[0].count',
      /at least 0/,
    ],
    [
      'count not an integer',
      withRule({ event_name: 'E', count: 'many' }),
      'target_rules.behavior.rules[0].count',
      /integer/,
    ],
    [
      'unknown count_operator',
      withRule({ event_name: 'E', count: 1, count_operator: 'around' }),
      'target_rules.behavior.rules[0].count_operator',
      /unknown count_operator "around"/,
    ],
    [
      'event rule without event_name',
      withRule({ rule_type: 'event' }),
      'target_rules.behavior.rules[0].event_name',
      /required/,
    ],
    [
      'empty event_name',
      withRule({ event_name: '  ' }),
      'target_rules.behavior.rules[0].event_name',
      /empty/,
    ],
    [
      'count on a first-session rule',
      withRule({ rule_type: 'first-session', count: 1 }),
      'target_rules.behavior.rules[0].count',
      /no count/,
    ],
    [
      'neg_time_window of one number',
      withRule({ event_name: 'E', neg_time_window: [3] }),
      'target_rules.behavior.rules[0].neg_time_window',
      /two integers/,
    ],
    [
      'neg_time_window beyond the maximum',
      withRule({ event_name: 'E', neg_time_window: [400, 0] }),
      'target_rules.behavior.rules[0].neg_time_window[0]',
      /at most 365/,
    ],
    [
      'unknown filter operator',
      withFilter({ dimension_name: 'x', operator: 'sounds like', values: ['a'] }),
      'target_rules.behavior.rules[0].conditions.filters[0].operator',
      /unknown operator "sounds like"/,
    ],
    [
      'filter without dimension_name',
      withFilter({ operator: 'is defined' }),
      'target_rules.behavior.rules[0].conditions.filters[0].dimension_name',
      /required/,
    ],
    [
      'is one of without values',
      withFilter({ dimension_name: 'x', operator: 'is one of', values: [] }),
      'target_rules.behavior.rules[0].conditions.filters[0].values',
      /at least one value/,
    ],
    [
      'between with one value',
      withFilter({ dimension_name: 'x', operator: 'between', value: '3' }),
      'target_rules.behavior.rules[0].conditions.filters[0].value',
      /exactly two/,
    ],
    [
      'greater than with two values',
      withFilter({ dimension_name: 'x', operator: 'greater than', values: ['1', '2'] }),
      'target_rules.behavior.rules[0].conditions.filters[0].values',
      /exactly one/,
    ],
    [
      'a value that is an object',
      withFilter({ dimension_name: 'x', operator: 'is one of', values: ['a', { b: 1 }] }),
      'target_rules.behavior.rules[0].conditions.filters[0].values[1]',
      /string or a number/,
    ],
    [
      'a value over the length limit',
      withFilter({ dimension_name: 'x', operator: 'is one of', values: ['a'.repeat(256)] }),
      'target_rules.behavior.rules[0].conditions.filters[0].values[0]',
      /at most 255/,
    ],
    [
      'too many values',
      withFilter({
        dimension_name: 'x',
        operator: 'is one of',
        values: Array.from({ length: 1001 }, String),
      }),
      'target_rules.behavior.rules[0].conditions.filters[0].values',
      /at most 1000 values/,
    ],
    [
      'too many filters',
      withRule({
        event_name: 'E',
        conditions: {
          filters: Array.from({ length: 21 }, () => ({ dimension_name: 'x', operator: 'is defined' })),
        },
      }),
      'target_rules.behavior.rules[0].conditions.filters',
      /at most 20 filters/,
    ],
    [
      'unknown conditions operator',
      withRule({ event_name: 'E', conditions: { operator: 'nand', filters: [] } }),
      'target_rules.behavior.rules[0].conditions.operator',
      /unknown/,
    ],
    [
      'a session filter on an event attribute',
      withRule({
        rule_type: 'session',
        conditions: { filters: [{ dimension_name: 'model', operator: 'is defined' }] },
      }),
      'target_rules.behavior.rules[0].conditions.filters[0].dimension_name',
      /session rule can filter only on/,
    ],
    ['criteria not an array', { profile: { criteria: 'x' } }, 'target_rules.profile.criteria', /array/],
    [
      'too many criteria',
      { profile: { criteria: Array.from({ length: 51 }, () => ({ key: 'k', operator: 'is defined' })) } },
      'target_rules.profile.criteria',
      /at most 50 criteria/,
    ],
    [
      'criterion without key',
      withCriterion({ operator: 'is defined' }),
      'target_rules.profile.criteria[0].key',
      /required/,
    ],
    [
      'unknown criterion operator',
      withCriterion({ key: 'k', operator: 'matches' }),
      'target_rules.profile.criteria[0].operator',
      /unknown operator/,
    ],
    [
      'unknown scope',
      withCriterion({ key: 'k', scope: 'global', operator: 'is defined' }),
      'target_rules.profile.criteria[0].scope',
      /unknown scope/,
    ],
    [
      'unknown date_type',
      withCriterion({ key: 'k', date_type: 'money', operator: 'is defined' }),
      'target_rules.profile.criteria[0].date_type',
      /unknown date_type/,
    ],
    [
      'before on a number',
      withCriterion({ key: 'k', date_type: 'number', operator: 'before', values: ['3'] }),
      'target_rules.profile.criteria[0].date_type',
      /date_type must be date/,
    ],
    [
      'a date that is no day',
      withCriterion({ key: 'k', date_type: 'date', operator: 'after', values: ['2023-02-30'] }),
      'target_rules.profile.criteria[0].values',
      /not a date/,
    ],
    [
      'a number criterion with text',
      withCriterion({ key: 'k', date_type: 'number', operator: 'greater than', values: ['ten'] }),
      'target_rules.profile.criteria[0].values',
      /not a number/,
    ],
    [
      'within the last of text',
      withCriterion({ key: 'k', operator: 'within the last', values: ['week'] }),
      'target_rules.profile.criteria[0].values',
      /number of days/,
    ],
  ])('%s', (_name, input, path, message) => {
    const found = issues(input)
    expect(found).toContainEqual({ path, message: expect.stringMatching(message) })
  })

  it('reports every issue at once', () => {
    const found = issues({
      behavior: { days: 999, rules: [{ event_name: 'E', count: -2 }, { rule_type: 'x' }] },
      profile: { criteria: [{ key: 'k', operator: 'nope' }] },
    })
    expect(found.map((i) => i.path)).toEqual([
      'target_rules.behavior.days',
      'target_rules.behavior.rules[0].count',
      'target_rules.behavior.rules[1].rule_type',
      'target_rules.profile.criteria[0].operator',
    ])
  })
})

describe('parsePushProfileTarget', () => {
  it('maps the push spellings to the canonical criteria', () => {
    const r = parsePushProfileTarget({
      profile: {
        op: 'or',
        criteria: [
          { key: 'age', scope: 'ServiceApplication', type: 'int', op: '>=', values: [21] },
          { key: 'plan', scope: 'Organization', type: 'string', op: 'in', values: 'gold' },
          {
            key: 'renewal',
            scope: 'Organization',
            type: 'date',
            op: 'between',
            values: ['2024-12-31', '2024-01-01'],
          },
          { key: 'email', scope: 'Organization', type: 'string', op: 'is_null' },
          { key: 'n', scope: 'ServiceApplication', type: 'int', op: 'not_in', values: [1, 2] },
          { key: 'n', scope: 'ServiceApplication', type: 'int', op: 'is_not_null', values: null },
          { key: 'n', scope: 'ServiceApplication', type: 'int', op: '<', values: [3] },
          { key: 'n', scope: 'ServiceApplication', type: 'int', op: '<=', values: [3] },
          { key: 'n', scope: 'ServiceApplication', type: 'int', op: '>', values: [3] },
        ],
      },
    })
    expect(r).toEqual({
      ok: true,
      rules: {
        operator: 'or',
        criteria: [
          {
            key: 'age',
            scope: 'app',
            date_type: 'number',
            operator: 'greater_than_or_equal',
            values: ['21'],
          },
          { key: 'plan', scope: 'org', date_type: 'string', operator: 'is_one_of', values: ['gold'] },
          {
            key: 'renewal',
            scope: 'org',
            date_type: 'date',
            operator: 'between',
            values: ['2024-01-01', '2024-12-31'],
          },
          { key: 'email', scope: 'org', date_type: 'string', operator: 'is_not_defined', values: [] },
          { key: 'n', scope: 'app', date_type: 'number', operator: 'is_not_one_of', values: ['1', '2'] },
          { key: 'n', scope: 'app', date_type: 'number', operator: 'is_defined', values: [] },
          { key: 'n', scope: 'app', date_type: 'number', operator: 'less_than', values: ['3'] },
          { key: 'n', scope: 'app', date_type: 'number', operator: 'less_than_or_equal', values: ['3'] },
          { key: 'n', scope: 'app', date_type: 'number', operator: 'greater_than', values: ['3'] },
        ],
      },
    })
    if (r.ok) expect(profileOnlyRules(r.rules)).toMatchObject({ behavior: null, profile: r.rules })
  })

  it.each([
    [{}, 'target.profile', /profile is required/],
    [{ profile: { op: 'and' } }, 'target.profile.criteria', /criteria is required/],
    [{ profile: { criteria: [] } }, 'target.profile.criteria', /must not be empty/],
    [
      { profile: { criteria: [{ key: 'k', scope: 'Galaxy', type: 'string', op: 'in', values: ['a'] }] } },
      'target.profile.criteria[0].scope',
      /ServiceApplication, Organization/,
    ],
    [
      { profile: { criteria: [{ key: 'k', scope: 'Organization', type: 'bool', op: 'in', values: ['a'] }] } },
      'target.profile.criteria[0].type',
      /string, int, date/,
    ],
    [
      {
        profile: {
          criteria: [{ key: 'k', scope: 'Organization', type: 'string', op: 'like', values: ['a'] }],
        },
      },
      'target.profile.criteria[0].op',
      /unknown op/,
    ],
    [
      {
        profile: { criteria: [{ key: 'k', scope: 'Organization', type: 'string', op: '>', values: ['a'] }] },
      },
      'target.profile.criteria[0].op',
      /int and date types only/,
    ],
    [
      { profile: { criteria: [{ key: 'k', scope: 'Organization', type: 'int', op: 'in', values: [] }] } },
      'target.profile.criteria[0].values',
      /at least one value/,
    ],
    [
      { profile: { op: 'xor', criteria: [{ key: 'k', scope: 'Organization', type: 'int', op: 'is_null' }] } },
      'target.profile.op',
      /unknown op/,
    ],
  ])('%j: issue at %s', (input, path, message) => {
    const r = parsePushProfileTarget(input)
    expect(r.ok).toBe(false)
    if (!r.ok) expect(r.issues).toContainEqual({ path, message: expect.stringMatching(message) })
  })

  it('prefixes issue paths with the caller’s root', () => {
    const r = parsePushProfileTarget({ profile: { criteria: 'x' } }, 'messages[2].target')
    expect(r).toEqual({
      ok: false,
      issues: [{ path: 'messages[2].target.profile.criteria', message: 'criteria must be an array' }],
    })
  })
})
