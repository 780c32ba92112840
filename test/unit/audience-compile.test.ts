import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  compileCounts,
  compileMembers,
  compileProfileMembers,
  type AudienceContext,
} from '../../pipelines/audiences/compile-rules.ts'
import type {
  AudienceData,
  DeviceRow,
  EventRow,
  SessionRow,
} from '../../pipelines/audiences/evaluate-rules.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import { parsePushProfileTarget, parseTargetRules, type TargetRules } from '../../schemas/audiences.ts'
import { insertAudienceData, queryCounts, queryMembers } from '../helpers/audience-data.ts'
import { tempDir } from '../helpers/temp.ts'

// Each operator compiled and run in the embedded engine over one small fixture; the expected
// members are worked out by hand from the fixture below (docs/audiences.md, "Target rules").

const NOW = Date.parse('2025-06-01T12:00:00Z')
const DAY = 86_400_000
const ctx: AudienceContext = { appId: 'shop', appProfiledbId: 10, orgProfiledbId: 20, now: NOW }

const device = (
  install: string,
  customer: string,
  token: string,
  status: string,
  app = 'shop',
): DeviceRow => ({
  app_id: app,
  install_uuid: install,
  customer_id: customer,
  platform: 'iOS',
  push_token: token,
  push_status: status,
  device_timezone: 'Europe/Paris',
})
const event = (
  install: string,
  name: string,
  daysAgo: number,
  attributes: Record<string, string> = {},
  dims: Partial<EventRow> = {},
): EventRow => ({
  app_id: 'shop',
  install_uuid: install,
  event_name: name,
  event_time: NOW - daysAgo * DAY,
  attributes,
  country: 'fr',
  language: 'fr',
  app_version: '1.0',
  os_version: '17.1',
  platform: 'iOS',
  model: '',
  device_timezone: 'Europe/Paris',
  ...dims,
})
const session = (
  install: string,
  id: string,
  daysAgo: number,
  dims: Partial<SessionRow> = {},
): SessionRow => ({
  app_id: 'shop',
  install_uuid: install,
  session_uuid: id,
  started_at: NOW - daysAgo * DAY,
  country: 'fr',
  app_ver: '1.0',
  os_ver: '17.1',
  platform: 'iOS',
  ...dims,
})

const fixture: AudienceData = {
  devices: [
    device('i1', 'c1', 't1', 'Enabled (Prominent)'),
    device('i2', 'c2', 't2', 'Disabled'),
    device('i3', '', 't3', ''),
    device('i4', 'c4', 'dead', 'Provisional'),
    device('i5', 'c5', '', ''),
    device('o1', 'c1', 'to', 'Enabled (Prominent)', 'other'),
  ],
  events: [
    event('i1', 'Purchase', 1, { item: 'red shoes', price: '12.50' }),
    event('i1', 'Purchase', 3, { item: 'hat', price: '3' }),
    event('i1', 'Purchase', 10, { item: 'scarf', price: '100' }),
    event('i2', 'Purchase', 40, { item: 'shoes', price: '20' }),
    event('i2', 'Open', 2, {}, { country: 'de', model: 'Pixel' }),
    event('i3', 'Open', 1, { screen: 'home' }, { app_version: '2.0' }),
    event('i4', 'Purchase', 5, { item: 'socks' }),
    { ...event('o1', 'Purchase', 1), app_id: 'other' },
    // Window bounds: exactly 7 days ago and exactly now are inside a 7-day window; 1 ms outside is not.
    event('i5', 'Edge', 7),
    event('i3', 'Edge', 0),
    { ...event('i2', 'Edge', 0), event_time: NOW + 1 },
    { ...event('i4', 'Edge', 7), event_time: NOW - 7 * DAY - 1 },
  ],
  sessions: [
    session('i1', 's1', 2),
    session('i1', 's1b', 20),
    session('i2', 's2', 50, { country: 'de' }),
    session('i3', 's3', 100),
    session('i3', 's3b', 1, { app_ver: '2.0' }),
    session('i5', 's5', 5),
    { ...session('o1', 'so', 1), app_id: 'other' },
  ],
  profiles: [
    {
      profiledb_id: 10,
      customer_id: 'c1',
      attributes: JSON.stringify({ plan: 'gold', age: 41, tags: ['vip', 7], renewal: '2025-05-30' }),
      attribute_types: { plan: 'string', age: 'integer', tags: 'set', renewal: 'date' },
      deleted: 0,
    },
    {
      profiledb_id: 10,
      customer_id: 'c2',
      attributes: JSON.stringify({ plan: 'silver', age: 17, renewal: '2024-01-01' }),
      attribute_types: { plan: 'string', age: 'integer', renewal: 'date' },
      deleted: 0,
    },
    {
      profiledb_id: 10,
      customer_id: 'c4',
      attributes: JSON.stringify({ age: '41' }),
      attribute_types: { age: 'string' },
      deleted: 0,
    },
    {
      profiledb_id: 20,
      customer_id: 'c1',
      attributes: JSON.stringify({ $email: 'ann@example.com' }),
      attribute_types: { $email: 'string' },
      deleted: 0,
    },
    {
      profiledb_id: 20,
      customer_id: 'c5',
      attributes: JSON.stringify({ vip: 'yes' }),
      attribute_types: { vip: 'string' },
      deleted: 0,
    },
    {
      profiledb_id: 20,
      customer_id: 'c4',
      attributes: JSON.stringify({ vip: 'yes' }),
      attribute_types: { vip: 'string' },
      deleted: 1,
    },
  ],
  invalidPushTokens: [{ app_id: 'shop', push_token: 'dead' }],
}

function rules(input: unknown): TargetRules {
  const r = parseTargetRules(input)
  if (!r.ok) throw new Error(JSON.stringify(r.issues))
  return r.rules
}

const purchase = (rule: object = {}, days = 30) => ({
  behavior: { days, rules: [{ event_name: 'Purchase', ...rule }] },
})
const purchaseWhere = (...filters: object[]) => purchase({ conditions: { operator: 'and', filters } })
const criterion = (c: object) => ({ profile: { criteria: [c] } })
const sessionRule = (rule: object) => ({ behavior: { days: 30, rules: [{ rule_type: 'session', ...rule }] } })

let store: ChdbStore
let cleanup: () => Promise<void>

beforeAll(async () => {
  const dir = await tempDir('audience-compile')
  cleanup = dir.cleanup
  store = await ChdbStore.open(dir.path)
  await migrate(store)
  await insertAudienceData(store, fixture)
})
afterAll(async () => {
  await store.close()
  await cleanup()
})

async function members(input: unknown): Promise<string[]> {
  const r = rules(input)
  const found = (await queryMembers(store, compileMembers(r, ctx))).map((m) => m.install_uuid)
  const counts = await queryCounts(store, compileCounts(r, ctx))
  expect(counts.user_count).toBe(found.length)
  return found
}

describe('behavior rules: event counts (Purchase in 30 days: i1 3, i4 1, others 0)', () => {
  it.each([
    ['event, no count: at least one', purchase(), ['i1', 'i4']],
    ['not-event, no count: none', purchase({ rule_type: 'not-event' }), ['i2', 'i3', 'i5']],
    ['less_than 2', purchase({ count: 2, count_operator: 'less_than' }), ['i2', 'i3', 'i4', 'i5']],
    ['greater_than 1', purchase({ count: 1, count_operator: 'greater_than' }), ['i1']],
    ['exactly 1', purchase({ count: 1, count_operator: 'exactly' }), ['i4']],
    ['exactly 0', purchase({ count: 0, count_operator: 'exactly' }), ['i2', 'i3', 'i5']],
    ['at_least 3', purchase({ count: 3, count_operator: 'at_least' }), ['i1']],
    ['at_most 1', purchase({ count: 1, count_operator: 'at_most' }), ['i2', 'i3', 'i4', 'i5']],
    ['a count without count_operator: at least', purchase({ count: 2 }), ['i1']],
    [
      'not-event less_than 3: the complement of fewer than 3',
      purchase({ rule_type: 'not-event', count: 3, count_operator: 'less_than' }),
      ['i1'],
    ],
    ['days 60 reaches i2 (40 days ago)', purchase({}, 60), ['i1', 'i2', 'i4']],
    ['neg_time_window [7, 2]', purchase({ neg_time_window: [-7, -2] }), ['i1', 'i4']],
    ['neg_time_window [45, 30]', purchase({ neg_time_window: [45, 30] }), ['i2']],
    ['an event of another name', { behavior: { rules: [{ event_name: 'Open' }] } }, ['i2', 'i3']],
    [
      'the window includes both bounds',
      { behavior: { days: 7, rules: [{ event_name: 'Edge' }] } },
      ['i3', 'i5'],
    ],
    [
      'neg_time_window includes both bounds',
      { behavior: { rules: [{ event_name: 'Edge', neg_time_window: [7, 0] }] } },
      ['i3', 'i5'],
    ],
    [
      'neg_time_window [6, 0] leaves out 7 days ago',
      { behavior: { rules: [{ event_name: 'Edge', neg_time_window: [6, 0] }] } },
      ['i3'],
    ],
  ])('%s', async (_name, input, expected) => {
    expect(await members(input)).toEqual(expected)
  })
})

describe('behavior rules: condition filters', () => {
  it.each([
    ['is one of', purchaseWhere({ dimension_name: 'item', operator: 'is one of', values: ['hat'] }), ['i1']],
    [
      'is_one_of (conversion spelling), scalar value',
      purchaseWhere({ dimension_name: 'item', operator: 'is_one_of', value: 'socks' }),
      ['i4'],
    ],
    [
      'is not one of',
      purchaseWhere({
        dimension_name: 'item',
        operator: 'is not one of',
        values: ['hat', 'red shoes', 'scarf'],
      }),
      ['i4'],
    ],
    ['contains', purchaseWhere({ dimension_name: 'item', operator: 'contains', values: ['shoe'] }), ['i1']],
    [
      'does not contain',
      purchaseWhere({ dimension_name: 'item', operator: 'does not contain', values: ['s'] }),
      ['i1'],
    ],
    [
      'greater than, numeric (text order would find none)',
      purchaseWhere({ dimension_name: 'price', operator: 'greater than', values: ['9'] }),
      ['i1'],
    ],
    [
      'greater than, text',
      purchaseWhere({ dimension_name: 'item', operator: 'greater than', values: ['r'] }),
      ['i1', 'i4'],
    ],
    [
      'less than, numeric',
      purchaseWhere({ dimension_name: 'price', operator: 'less than', values: [4] }),
      ['i1'],
    ],
    ['is defined', purchaseWhere({ dimension_name: 'price', operator: 'is defined' }), ['i1']],
    ['is not defined', purchaseWhere({ dimension_name: 'price', operator: 'is not defined' }), ['i4']],
    [
      'device dimension is one of',
      {
        behavior: {
          rules: [
            {
              event_name: 'Open',
              conditions: { filters: [{ dimension_name: 'country', operator: 'is one of', values: ['de'] }] },
            },
          ],
        },
      },
      ['i2'],
    ],
    [
      'device dimension is defined (empty is not)',
      {
        behavior: {
          rules: [
            {
              event_name: 'Open',
              conditions: { filters: [{ dimension_name: 'model', operator: 'is defined' }] },
            },
          ],
        },
      },
      ['i2'],
    ],
    [
      'device dimension by its SDK spelling',
      {
        behavior: {
          rules: [
            {
              event_name: 'Open',
              conditions: {
                filters: [{ dimension_name: 'app_ver', operator: 'is one of', values: ['2.0'] }],
              },
            },
          ],
        },
      },
      ['i3'],
    ],
    [
      'conditions or',
      purchase({
        conditions: {
          operator: 'or',
          filters: [
            { dimension_name: 'item', operator: 'is one of', values: ['hat'] },
            { dimension_name: 'item', operator: 'is one of', values: ['socks'] },
          ],
        },
      }),
      ['i1', 'i4'],
    ],
    [
      'conditions and',
      purchaseWhere(
        { dimension_name: 'item', operator: 'contains', values: ['s'] },
        { dimension_name: 'price', operator: 'is defined' },
      ),
      ['i1'],
    ],
  ])('%s', async (_name, input, expected) => {
    expect(await members(input)).toEqual(expected)
  })

  it('between is inclusive at both ends and numeric (12.50 and 3 in [3, 12.5], 100 not)', async () => {
    const between = { dimension_name: 'price', operator: 'between', values: ['12.5', '3'] }
    expect(
      await members(purchase({ count: 2, count_operator: 'exactly', conditions: { filters: [between] } })),
    ).toEqual(['i1'])
  })

  it('greater than or equal and less than or equal include the bound', async () => {
    expect(
      await members(purchaseWhere({ dimension_name: 'price', operator: '>=', values: ['100'] })),
    ).toEqual(['i1'])
    expect(
      await members(
        purchase({
          count: 1,
          count_operator: 'exactly',
          conditions: { filters: [{ dimension_name: 'price', operator: '<=', values: ['3'] }] },
        }),
      ),
    ).toEqual(['i1'])
  })
})

describe('behavior rules: sessions (30 days: i1 2 sessions, i3 1, i5 1)', () => {
  it.each([
    ['session', sessionRule({}), ['i1', 'i3', 'i5']],
    ['not-session', sessionRule({ rule_type: 'not-session' }), ['i2', 'i4']],
    ['session at least 2', sessionRule({ count: 2, count_operator: 'at_least' }), ['i1']],
    [
      'session filtered on app_version',
      sessionRule({
        conditions: { filters: [{ dimension_name: 'app_version', operator: 'is one of', values: ['2.0'] }] },
      }),
      ['i3'],
    ],
    [
      'first-session: first session ever inside the window',
      sessionRule({ rule_type: 'first-session' }),
      ['i1', 'i5'],
    ],
  ])('%s', async (_name, input, expected) => {
    expect(await members(input)).toEqual(expected)
  })
})

describe('profile criteria (app db: c1 gold/41/[vip,7], c2 silver/17, c4 age "41"; org db: c1 $email, c5 vip)', () => {
  it.each([
    ['is defined', criterion({ key: 'plan', operator: 'is defined' }), ['i1', 'i2']],
    [
      'is not defined (no customer, no profile: not defined)',
      criterion({ key: 'plan', operator: 'is not defined' }),
      ['i3', 'i4', 'i5'],
    ],
    ['is one of', criterion({ key: 'plan', operator: 'is one of', values: ['gold'] }), ['i1']],
    [
      'is not one of',
      criterion({ key: 'plan', operator: 'is not one of', values: ['gold'] }),
      ['i2', 'i3', 'i4', 'i5'],
    ],
    [
      'is one of, an integer element of a set',
      criterion({ key: 'tags', operator: 'is one of', values: [7] }),
      ['i1'],
    ],
    ['contains', criterion({ key: 'plan', operator: 'contains', values: ['ilv'] }), ['i2']],
    [
      'does not contain',
      criterion({ key: 'plan', operator: 'does not contain', values: ['ilv'] }),
      ['i1', 'i3', 'i4', 'i5'],
    ],
    [
      'greater than, numbers (integer and numeric text)',
      criterion({ key: 'age', operator: 'greater than', values: [18] }),
      ['i1', 'i4'],
    ],
    [
      'less than',
      criterion({ key: 'age', date_type: 'number', operator: 'less than', values: ['18'] }),
      ['i2'],
    ],
    ['between', criterion({ key: 'age', operator: 'between', values: [41, 17] }), ['i1', 'i2', 'i4']],
    ['greater than, text', criterion({ key: 'plan', operator: 'greater than', values: ['h'] }), ['i2']],
    [
      'after (date)',
      criterion({ key: 'renewal', date_type: 'date', operator: 'after', values: ['2025-01-01'] }),
      ['i1'],
    ],
    [
      'before (date)',
      criterion({ key: 'renewal', operator: 'before', values: ['2025-01-01T00:00:00Z'] }),
      ['i2'],
    ],
    [
      'within the last 7 days',
      criterion({ key: 'renewal', operator: 'within the last', values: [7] }),
      ['i1'],
    ],
    [
      'a date comparison needs a date attribute',
      criterion({ key: 'plan', operator: 'after', values: ['2000-01-01'] }),
      [],
    ],
    ['org scope is defined', criterion({ key: '$email', scope: 'org', operator: 'is defined' }), ['i1']],
    [
      'org scope skips deleted profiles',
      criterion({ key: 'vip', scope: 'org', operator: 'is one of', values: ['yes'] }),
      ['i5'],
    ],
    [
      'app scope does not read the org db',
      criterion({ key: 'vip', scope: 'app', operator: 'is defined' }),
      [],
    ],
  ])('%s', async (_name, input, expected) => {
    expect(await members(input)).toEqual(expected)
  })

  it('criteria or', async () => {
    const input = {
      profile: {
        operator: 'or',
        criteria: [
          { key: 'plan', operator: 'is one of', values: ['silver'] },
          { key: 'vip', scope: 'org', operator: 'is defined' },
        ],
      },
    }
    expect(await members(input)).toEqual(['i2', 'i5'])
  })
})

describe('combining behavior and profile', () => {
  it.each([
    [
      'and',
      { ...purchase(), profile: { criteria: [{ key: 'plan', operator: 'is one of', values: ['gold'] }] } },
      ['i1'],
    ],
    [
      'or',
      {
        behavior_profile_operator: 'or',
        ...purchase(),
        profile: { criteria: [{ key: 'plan', operator: 'is one of', values: ['silver'] }] },
      },
      ['i1', 'i2', 'i4'],
    ],
    [
      'behavior_rule_operator or',
      {
        behavior: {
          behavior_rule_operator: 'or',
          rules: [
            { event_name: 'Purchase', count: 1, count_operator: 'exactly' },
            { rule_type: 'session', count: 2, count_operator: 'at_least' },
          ],
        },
      },
      ['i1', 'i4'],
    ],
    ['no rules at all: every install of the app', {}, ['i1', 'i2', 'i3', 'i4', 'i5']],
  ])('%s', async (_name, input, expected) => {
    expect(await members(input)).toEqual(expected)
  })
})

describe('member rows, counts and paging', () => {
  it('returns each member with its device, push state and last session', async () => {
    const rows = await queryMembers(store, compileMembers(rules({}), ctx))
    expect(rows).toEqual([
      {
        install_uuid: 'i1',
        customer_id: 'c1',
        platform: 'iOS',
        push_token: 't1',
        push_status: 'Enabled (Prominent)',
        device_timezone: 'Europe/Paris',
        has_push: 1,
        last_session_at: NOW - 2 * DAY,
      },
      {
        install_uuid: 'i2',
        customer_id: 'c2',
        platform: 'iOS',
        push_token: 't2',
        push_status: 'Disabled',
        device_timezone: 'Europe/Paris',
        has_push: 0,
        last_session_at: NOW - 50 * DAY,
      },
      {
        install_uuid: 'i3',
        customer_id: '',
        platform: 'iOS',
        push_token: 't3',
        push_status: '',
        device_timezone: 'Europe/Paris',
        has_push: 1,
        last_session_at: NOW - DAY,
      },
      {
        install_uuid: 'i4',
        customer_id: 'c4',
        platform: 'iOS',
        push_token: 'dead',
        push_status: 'Provisional',
        device_timezone: 'Europe/Paris',
        has_push: 0,
        last_session_at: null,
      },
      {
        install_uuid: 'i5',
        customer_id: 'c5',
        platform: 'iOS',
        push_token: '',
        push_status: '',
        device_timezone: 'Europe/Paris',
        has_push: 0,
        last_session_at: NOW - 5 * DAY,
      },
    ])
  })

  it('counts members, members with an enabled push token, members seen in 30 days', async () => {
    expect(await queryCounts(store, compileCounts(rules({}), ctx))).toEqual({
      user_count: 5,
      has_push: 2,
      seen_last_thirty: 3,
    })
    expect(await queryCounts(store, compileCounts(rules(purchase()), ctx))).toEqual({
      user_count: 2,
      has_push: 1,
      seen_last_thirty: 1,
    })
  })

  it('pages by install_uuid', async () => {
    const page = async (afterInstall?: string) =>
      (await queryMembers(store, compileMembers(rules({}), ctx, { afterInstall, limit: 2 }))).map(
        (m) => m.install_uuid,
      )
    expect(await page()).toEqual(['i1', 'i2'])
    expect(await page('i2')).toEqual(['i3', 'i4'])
    expect(await page('i4')).toEqual(['i5'])
    expect(await page('i5')).toEqual([])
  })

  it('compiles the push profile target with the same compiler', async () => {
    const target = parsePushProfileTarget({
      profile: {
        op: 'and',
        criteria: [{ key: 'age', scope: 'ServiceApplication', type: 'int', op: '>', values: 18 }],
      },
    })
    if (!target.ok) throw new Error(JSON.stringify(target.issues))
    const rows = await queryMembers(store, compileProfileMembers(target.rules, ctx))
    expect(rows.map((m) => m.install_uuid)).toEqual(['i1', 'i4'])
  })
})

describe('the SQL', () => {
  it('carries user values only as parameters', async () => {
    const hostile = "x'); DROP TABLE devices; --"
    const r = rules({
      behavior: {
        rules: [
          {
            event_name: hostile,
            rule_type: 'not-event',
            conditions: {
              filters: [{ dimension_name: `${hostile}k`, operator: 'contains', values: [`${hostile}v`] }],
            },
          },
        ],
      },
      profile: { criteria: [{ key: `${hostile}p`, operator: 'is not one of', values: [`${hostile}q`] }] },
    })
    const q = compileMembers(r, { ...ctx, appId: `${hostile}app` })
    expect(q.sql).not.toContain('DROP')
    expect(Object.values(q.params)).toEqual(
      expect.arrayContaining([
        hostile,
        `${hostile}k`,
        [`${hostile}v`],
        `${hostile}p`,
        [`${hostile}q`],
        `${hostile}app`,
      ]),
    )
    expect(await queryMembers(store, q)).toEqual([])
    expect((await members({})).length).toBe(5)
  })

  it("reads each event rule's rows by the primary key (app, name, window) into one GROUP BY", () => {
    const q = compileMembers(
      rules({
        behavior: {
          days: 30,
          rules: [
            { event_name: 'Purchase', count: 2 },
            { event_name: 'Open', neg_time_window: [60, 40] },
            {
              event_name: 'Purchase',
              rule_type: 'not-event',
              conditions: { filters: [{ dimension_name: 'item', operator: 'is one of', values: ['hat'] }] },
            },
          ],
        },
      }),
      ctx,
    )
    // One branch per rule, each with its name and window (what the key narrows) and its filters.
    const branches = [
      ...q.sql.matchAll(
        /SELECT install_uuid, toUInt8\((\d)\) AS r FROM events WHERE app_id = \{p\d+:String\} AND event_name = \{(p\d+):String\} AND event_time >= fromUnixTimestamp64Milli\(\{(p\d+):Int64\}, 'UTC'\) AND event_time <= fromUnixTimestamp64Milli\(\{p\d+:Int64\}, 'UTC'\) AND \(([^)]*)\)/g,
      ),
    ]
    expect(branches.map((b) => [b[1], q.params[b[2] ?? ''], q.params[b[3] ?? '']])).toEqual([
      ['0', 'Purchase', NOW - 30 * DAY],
      ['1', 'Open', NOW - 60 * DAY],
      ['2', 'Purchase', NOW - 30 * DAY],
    ])
    expect(branches[0]?.[4]).toBe('1')
    expect(branches[2]?.[4]).toMatch(/^mapContains\(attributes, /)
    expect(q.sql.match(/FROM events/g)).toHaveLength(3)
    expect(q.sql.match(/ UNION ALL /g)).toHaveLength(2)
    expect(q.sql).toContain('countIf(r = 0) AS c0, countIf(r = 1) AS c1, countIf(r = 2) AS c2 FROM (')
  })

  // Each case: the rules, whether the events side may drop installs that fail the event rules
  // (INNER JOIN … HAVING), and the members (fixture: Purchase in 30 days i1 3, i4 1; Open i2, i3).
  it.each([
    [
      'event rules joined by and',
      { behavior: { rules: [{ event_name: 'Purchase' }, { event_name: 'Open', rule_type: 'not-event' }] } },
      true,
      ['i1', 'i4'],
    ],
    [
      'event rules joined by or',
      {
        behavior: {
          behavior_rule_operator: 'or',
          rules: [{ event_name: 'Purchase', count: 2 }, { event_name: 'Open' }],
        },
      },
      true,
      ['i1', 'i2', 'i3'],
    ],
    [
      'and a profile criterion',
      { ...purchase(), ...criterion({ key: 'plan', operator: 'is one of', values: ['gold'] }) },
      true,
      ['i1'],
    ],
    [
      'a rule that holds at zero (at_most)',
      purchase({ count: 1, count_operator: 'at_most' }),
      false,
      ['i2', 'i3', 'i4', 'i5'],
    ],
    [
      'a rule that holds at zero (not-event)',
      purchase({ rule_type: 'not-event' }),
      false,
      ['i2', 'i3', 'i5'],
    ],
    [
      'or with a session rule',
      {
        behavior: {
          behavior_rule_operator: 'or',
          rules: [
            { event_name: 'Purchase', count: 2 },
            { rule_type: 'session', count: 1, count_operator: 'greater_than' },
          ],
        },
      },
      false,
      ['i1'],
    ],
    [
      'or with the profile part',
      {
        behavior_profile_operator: 'or',
        ...purchase({ count: 2 }),
        ...criterion({ key: 'plan', operator: 'is one of', values: ['silver'] }),
      },
      false,
      ['i1', 'i2'],
    ],
  ])('events side of %s', async (_name, input, inner, expected) => {
    for (const q of [compileMembers(rules(input), ctx), compileCounts(rules(input), ctx)]) {
      expect(q.sql.includes('INNER JOIN (SELECT install_uuid')).toBe(inner)
      expect(/GROUP BY install_uuid HAVING /.test(q.sql)).toBe(inner)
    }
    expect(await members(input)).toEqual(expected)
  })

  it('counts group only the sessions in a counted window, members every session', async () => {
    const seen = (q: { sql: string }) =>
      q.sql.match(/FROM sessions WHERE app_id = \{p\d+:String\}( AND \(.*?\))? GROUP BY/)
    const r = rules(sessionRule({ count: 1, count_operator: 'at_least', neg_time_window: [60, 40] }))
    expect(seen(compileCounts(r, ctx))?.[1]).toMatch(/started_at >= .* OR \(started_at >= /)
    expect(seen(compileMembers(r, ctx))?.[1]).toBeUndefined()
    // first-session reads every session of the install, for counts too.
    expect(
      seen(compileCounts(rules({ behavior: { rules: [{ rule_type: 'first-session' }] } }), ctx))?.[1],
    ).toBeUndefined()
    // i2's only session is 50 days ago: outside the seen window, inside the rule's.
    expect(
      await members(sessionRule({ count: 1, count_operator: 'at_least', neg_time_window: [60, 40] })),
    ).toEqual(['i2'])
    const counts = await queryCounts(store, compileCounts(r, ctx))
    expect(counts).toEqual({ user_count: 1, has_push: 0, seen_last_thirty: 0 })
  })
})
