import { describe, expect, it } from 'vitest'
import { compileQuery, windowStart } from '../../pipelines/query/compile-query.ts'
import { parseQuery, QueryError } from '../../pipelines/query/parse-query.ts'
import { formPairs, nameList, nestPairs } from '../../pipelines/query/query-params.ts'
import { queryEcho, resultCsv, resultRows } from '../../pipelines/query/result-set.ts'

const fromQs = (qs: string) => parseQuery(nestPairs(formPairs(qs)))
const ctx = { now: Date.parse('2025-03-10T12:00:00Z'), timeZone: 'UTC', profiledbId: 7 }

describe('query parameters', () => {
  it('reads comma lists with spaces, parentheses and names holding commas inside parentheses', () => {
    expect(nameList('users, avg(a:timeSpent),a:Amount (USD) ,day', 'metrics')).toEqual([
      'users',
      'avg(a:timeSpent)',
      'a:Amount (USD)',
      'day',
    ])
    expect(nameList('["users","a:x, y"]', 'metrics')).toEqual(['users', 'a:x, y'])
    expect(nameList(['users', 'sessions,occurrences'], 'metrics')).toEqual([
      'users',
      'sessions',
      'occurrences',
    ])
  })

  it('nests Rails brackets into lists and objects', () => {
    const params = nestPairs(
      formPairs(
        'metrics[]=users&metrics[]=occurrences&conditions[day][]=between&conditions[day][]=2025-01-01&conditions[day][]=2025-01-31&conditions[country]=fr&order[0]=-users',
      ),
    )
    expect(params).toEqual({
      metrics: ['users', 'occurrences'],
      conditions: { day: ['between', '2025-01-01', '2025-01-31'], country: 'fr' },
      order: ['-users'],
    })
  })

  it('parses a whole query: names kept verbatim, conditions, order, limit, days', () => {
    const q = fromQs(
      `app_id=A&metrics=users,avg(a:Amount (USD))&dimensions=day,a:sku&conditions=${encodeURIComponent(
        JSON.stringify({ 'a:sku': ['not_in', null, 'x'], users: ['>', 5], event_name: 'Buy' }),
      )}&order=-users&limit=10&days=30&comment=hi`,
    )
    expect(q.appIds).toEqual(['A'])
    expect(q.metrics.map((m) => m.name)).toEqual(['users', 'avg(a:Amount (USD))'])
    expect(q.metrics[1]!.metric).toEqual({ kind: 'aggregate', fn: 'avg', key: 'Amount (USD)' })
    expect(q.dimensions.map((d) => d.dimension)).toEqual([
      { kind: 'time', unit: 'day' },
      { kind: 'attribute', key: 'sku' },
    ])
    expect(q.conditions.map((c) => [c.name, c.op, c.operands])).toEqual([
      ['a:sku', 'not_in', [null, 'x']],
      ['users', '>', [5]],
      ['event_name', '==', ['Buy']],
    ])
    expect(q.order).toEqual([{ name: 'users', descending: true }])
    expect([q.limit, q.days, q.comment]).toEqual([10, 30, 'hi'])
  })

  it('names the wrong part of a query', () => {
    const cases: [string, string][] = [
      ['metrics=users', 'app_id is required'],
      ['app_id=A', 'at least one metric'],
      ['app_id=A&metrics=foo', "unknown metric 'foo'"],
      ['app_id=A&metrics=users&dimensions=bar', "unknown dimension 'bar'"],
      ['app_id=A&metrics=users&conditions={x', 'conditions is not valid JSON'],
      ['app_id=A&metrics=users&conditions=[1]', 'conditions must be a JSON object'],
      [
        'app_id=A&metrics=users&conditions={"day":["between","2025-01-01"]}',
        'between takes two operands, got 1',
      ],
      [
        'app_id=A&metrics=users&conditions={"day":["between","2025-01-01","soon"]}',
        'is not a YYYY-MM-DD value',
      ],
      ['app_id=A&metrics=users&conditions={"country":["like","f"]}', 'unknown operator'],
      ['app_id=A&metrics=users&conditions={"country":["<",null]}', 'cannot compare with null'],
      ['app_id=A&metrics=users&conditions={"sessions":[">",1]}', 'needs that metric in metrics'],
      ['app_id=A&metrics=users&conditions={"users":[">","many"]}', 'compares with numbers'],
      ['app_id=A&metrics=users&conditions={"country":["in_groups",["x"]]}', 'in_groups takes one object'],
      ['app_id=A&metrics=users&limit=0', 'limit must be an integer from 1 to 50000'],
      ['app_id=A&metrics=users&limit=50001', 'limit must be an integer'],
      ['app_id=A&metrics=users&days=x', 'days must be an integer'],
      ['app_id=A&metrics=users&order=country', "order: 'country' is not one of"],
      ['app_id=A&metrics=users,users', "'users' is asked for twice"],
      ['app_id=A&metrics=profiles,users', 'profiles cannot be combined'],
      ['app_id=A&metrics=users&dimensions=profile_attribute_key', 'goes only with the profiles metric'],
    ]
    for (const [qs, message] of cases) {
      expect(() => fromQs(qs), qs).toThrow(QueryError)
      expect(() => fromQs(qs), qs).toThrow(message)
    }
  })
})

describe('query compiler', () => {
  it('puts no value of the query in the SQL text: every one is a parameter', () => {
    const q = fromQs(
      `app_id=SECRET-APP&metrics=users,avg(a:Amount_ZZ)&dimensions=a:Colour_QQ,event_name&conditions=${encodeURIComponent(
        JSON.stringify({
          'a:Colour_QQ': ['in', 'Red_VV', null],
          event_name: ['in_groups', { Group_WW: ['Buy_UU'] }],
          'n:price': ['between', 1.5, 99],
          users: ['>=', 3],
        }),
      )}`,
    )
    const c = compileQuery(q, ctx)
    for (const secret of [
      'SECRET-APP',
      'Amount_ZZ',
      'Colour_QQ',
      'Red_VV',
      'Group_WW',
      'Buy_UU',
      'price',
      '99',
    ])
      expect(c.sql).not.toContain(secret)
    expect(Object.values(c.params)).toEqual(
      expect.arrayContaining([
        ['SECRET-APP'],
        'Colour_QQ',
        ['Red_VV'],
        'Group_WW',
        ['Buy_UU'],
        'price',
        99,
        1.5,
        3,
      ]),
    )
    expect(c.columns.map((col) => [col.name, col.metric])).toEqual([
      ['a:Colour_QQ', false],
      ['event_name', false],
      ['users', true],
      ['avg(a:Amount_ZZ)', true],
    ])
    // An event-attribute dimension: only events are read.
    expect(c.readsSessions).toBe(false)
    expect(c.sql).toContain('HAVING')
  })

  it('reads sessions beside events when nothing asks for an event-only value', () => {
    expect(
      compileQuery(fromQs('app_id=A&metrics=users,sessions&dimensions=day,country'), ctx).readsSessions,
    ).toBe(true)
    expect(compileQuery(fromQs('app_id=A&metrics=users&dimensions=event_name'), ctx).readsSessions).toBe(
      false,
    )
  })

  it('answers from the rollup only what fits it, naming the estimated metrics', () => {
    const rollup = (qs: string, timeZone = 'UTC') => compileQuery(fromQs(qs), { ...ctx, timeZone })
    const fit = rollup('app_id=A&metrics=users,occurrences,ltv&dimensions=day,event_name&days=30')
    expect(fit.source).toBe('query_rollup')
    expect(fit.sql).toContain('FROM query_rollup')
    expect(fit.sql).not.toMatch(/FROM events|FROM sessions/)
    expect(fit.estimated).toEqual(['users'])
    // Whole-hour zones, daylight saving or not, fit; half-hour ones do not.
    expect(rollup('app_id=A&metrics=sessions&dimensions=week', 'America/New_York').source).toBe(
      'query_rollup',
    )
    expect(rollup('app_id=A&metrics=sessions&dimensions=week', 'Asia/Kolkata').source).toBe('raw')
    expect(rollup('app_id=A&metrics=sessions&dimensions=week', 'Australia/Lord_Howe').source).toBe('raw')
    // Session lengths by time: the session rollup, exact; beside another metric, by another
    // dimension or in a half-hour zone, the raw tables.
    const lengths = rollup('app_id=A&metrics=sessions,average_session_length&dimensions=week&days=28')
    expect([lengths.source, lengths.estimated]).toEqual(['query_session_hours', []])
    expect(lengths.sql).toContain('FROM query_session_hours')
    expect(lengths.sql).toContain('FROM query_session_lengths FINAL')
    expect(lengths.sql).not.toMatch(/FROM (events|sessions|raw_log)\b/)
    expect(rollup('app_id=A&metrics=average_session_length&dimensions=week', 'Asia/Kolkata').source).toBe(
      'raw',
    )
    // What the rollups do not keep: lengths by other dimensions or beside other metrics, first
    // appearances, attributes, other device columns.
    for (const qs of [
      'app_id=A&metrics=average_session_length&dimensions=country',
      'app_id=A&metrics=average_session_length,users&dimensions=week',
      'app_id=A&metrics=new_users&dimensions=day',
      'app_id=A&metrics=users&dimensions=birth_day',
      'app_id=A&metrics=users&dimensions=new_device',
      'app_id=A&metrics=avg(a:x)',
      'app_id=A&metrics=occurrences&dimensions=a:plan',
      'app_id=A&metrics=occurrences&dimensions=device_model',
      'app_id=A&metrics=sessions&dimensions=country',
      `app_id=A&metrics=occurrences&conditions=${encodeURIComponent('{"platform":"iOS"}')}`,
      `app_id=A&metrics=occurrences&conditions=${encodeURIComponent('{"a:plan":"x"}')}`,
    ]) {
      const c = rollup(qs)
      expect([qs, c.source, c.estimated]).toEqual([qs, 'raw', []])
    }
    // rollups: false answers from the raw tables what the rollup would answer (to compare both).
    expect(compileQuery(fromQs('app_id=A&metrics=occurrences'), { ...ctx, rollups: false }).source).toBe(
      'raw',
    )
  })

  it('reads UTC days as the daily projections keep them, hours and other zones by the hour', () => {
    const at = (qs: string, timeZone = 'UTC') => compileQuery(fromQs(qs), { ...ctx, timeZone })
    // UTC: days, weeks and months are buckets of the rollup's UTC day, the window a Date, no zone.
    const byDay = at('app_id=A&metrics=users&dimensions=day&days=30')
    expect(byDay.source).toBe('query_rollup')
    expect(byDay.sql).toContain('CAST(toString(toDate(f.hour)) AS Nullable(String)) AS d0')
    expect(byDay.sql).toMatch(/\(toDate\(f\.hour\) >= \{(p\d+):Date\}\)/)
    const since = /toDate\(f\.hour\) >= \{(p\d+):Date\}/.exec(byDay.sql)![1]!
    expect(byDay.params[since]).toBe('2025-02-09')
    expect(Object.values(byDay.params)).not.toContain('UTC')
    expect(byDay.sql).not.toContain('f.hour >=')
    const coarser = at('app_id=A&metrics=occurrences&dimensions=week,month,event_name')
    expect(coarser.sql).toContain('toString(toMonday(toDate(f.hour)))')
    expect(coarser.sql).toContain(`formatDateTime(toDate(f.hour), '%Y-%m')`)
    // A day condition on a query not grouped by day reads the same UTC day.
    const dayCondition = at(
      `app_id=A&metrics=occurrences&conditions=${encodeURIComponent(JSON.stringify({ day: ['between', '2025-03-01', '2025-03-02'] }))}`,
    )
    expect(dayCondition.sql).toContain('toString(toDate(f.hour)) >= {p1:String}')
    // By the hour, or in another zone (even one at UTC+0 in winter): the hourly rows, zone bound.
    for (const [qs, zone] of [
      ['app_id=A&metrics=users&dimensions=hour&days=2', 'UTC'],
      ['app_id=A&metrics=users&dimensions=day&days=30', 'Europe/London'],
      ['app_id=A&metrics=users&dimensions=day&days=30', 'America/New_York'],
    ] as const) {
      const c = at(qs, zone)
      expect([qs, zone, c.source]).toEqual([qs, zone, 'query_rollup'])
      expect(c.sql).toMatch(/\(f\.hour >= toDateTime\(\{p\d+:Int64\}, 'UTC'\)\)/)
      expect(c.sql).not.toContain('toDate(f.hour)')
      expect(Object.values(c.params)).toContain(zone)
    }
    // Etc/UTC is UTC; the raw tables keep their zone whatever it is.
    expect(at('app_id=A&metrics=users&dimensions=day', 'Etc/UTC').sql).toContain('toString(toDate(f.hour))')
    expect(at('app_id=A&metrics=users&dimensions=day,country').sql).toContain('toDate(f.t, {p0:String})')
  })

  it('reads only the columns and states the metrics and dimensions use', () => {
    // The rollup's rows, read directly (no subquery to analyse): a count reads the sums, not the
    // uniq states.
    const count = compileQuery(fromQs('app_id=A&metrics=occurrences&dimensions=day&days=7'), ctx)
    expect(count.sql).toMatch(/\nFROM query_rollup AS f\s+WHERE \(f\.app_id IN \{p\d+:Array\(String\)\}\)/)
    expect(count.sql).toContain('toString(toDate(f.hour)) AS Nullable(String)) AS d0')
    expect(count.sql).toContain('sum(f.occurrences)')
    expect(count.sql).not.toMatch(/users|sessions|ltv/)
    const perEvent = compileQuery(fromQs('app_id=A&metrics=sessions_per_event'), ctx)
    expect(perEvent.sql).toContain('uniqMergeIf(f.sessions, ')
    expect(perEvent.sql).not.toMatch(/users|ltv|FROM \(/)
    // The raw facts: a count by country reads neither attributes nor users nor times.
    const byCountry = compileQuery(fromQs('app_id=A&metrics=occurrences&dimensions=country'), ctx)
    expect(byCountry.source).toBe('raw')
    expect(byCountry.sql).toContain(`SELECT 'e' AS kind, toString(country) AS country\n    FROM events`)
    expect(byCountry.sql).toContain(
      `SELECT 's' AS kind, toString(country) AS country\n    FROM sessions FINAL`,
    )
    expect(byCountry.sql).not.toContain('attributes')
    // An attribute asked: its map is read, from the events alone.
    const byPlan = compileQuery(fromQs('app_id=A&metrics=users&dimensions=a:plan'), ctx)
    expect(byPlan.sql).toMatch(/SELECT 'e' AS kind, [^\n]*AS uid, attributes\n/)
  })

  it('binds a value once however often the query names it, and names no parameter it does not bind', () => {
    const groups = { Commerce: ['buy', 'cart'], Browse: ['view'] }
    const c = compileQuery(
      fromQs(
        `app_id=A&metrics=occurrences,users&dimensions=event_name,day&days=30&conditions=${encodeURIComponent(
          JSON.stringify({ event_name: ['in_groups', groups], day: ['!=', '2025-03-01'] }),
        )}`,
      ),
      ctx,
    )
    const values = Object.values(c.params).map((v) => JSON.stringify(v))
    expect(new Set(values).size).toBe(values.length)
    expect(values).toEqual(expect.arrayContaining(['["buy","cart"]', '["view"]', '"Commerce"', '"Browse"']))
    const named = new Set([...c.sql.matchAll(/\{(\w+):/g)].map((m) => m[1]))
    expect([...named].sort()).toEqual(Object.keys(c.params).sort())
    // The conditions on the dimensions asked read them by alias: each group's test is written once.
    expect(c.sql.match(/multiIf/g)).toHaveLength(1)
    expect(c.sql).toContain('(d0 IS NOT NULL)')
    expect(c.sql).toMatch(/\(\(d1 IS NULL OR d1 != \{p\d+:String\}\)\)/)
    // No join, no setting for joins (the rollup's rows); the facts' joins keep theirs.
    expect(c.sql).not.toContain('SETTINGS')
    const joined = compileQuery(fromQs('app_id=A&metrics=new_users&dimensions=day'), ctx)
    expect(joined.sql).toContain('LEFT JOIN')
    expect(joined.sql).toMatch(/SETTINGS join_use_nulls = 0$/)
  })

  it('asks the engine for one row more than the limit', () => {
    const c = compileQuery(fromQs('app_id=A&metrics=users&limit=10'), ctx)
    expect(Object.values(c.params)).toContain(11)
  })

  it('starts the days window at midnight in the app time zone', () => {
    const now = Date.parse('2025-03-10T02:00:00Z') // 2025-03-09 21:00 in New York (EDT from 03-09)
    expect(new Date(windowStart(now, 1, 'UTC')).toISOString()).toBe('2025-03-10T00:00:00.000Z')
    expect(new Date(windowStart(now, 1, 'America/New_York')).toISOString()).toBe('2025-03-09T05:00:00.000Z')
    expect(new Date(windowStart(now, 2, 'America/New_York')).toISOString()).toBe('2025-03-08T05:00:00.000Z')
  })
})

describe('result set', () => {
  it('keys rows by the requested names, metrics as numbers, dimensions as strings or null, and cuts at the limit', () => {
    const columns = [
      { alias: 'd0', name: 'a:Amount (USD)', metric: false },
      { alias: 'm0', name: 'users', metric: true },
    ]
    const rows = [
      { d0: '5', m0: '12' },
      { d0: null, m0: 3 },
      { d0: 'x', m0: 1 },
    ]
    expect(resultRows(rows, columns, 2)).toEqual({
      results: [
        { 'a:Amount (USD)': '5', users: 12 },
        { 'a:Amount (USD)': null, users: 3 },
      ],
      truncated: true,
    })
    expect(resultCsv(['a:Amount (USD)', 'users'], [{ 'a:Amount (USD)': 'a,"b"', users: 1 }])).toBe(
      'a:Amount (USD),users\r\n"a,""b""",1\r\n',
    )
  })

  it('echoes the query as understood', () => {
    const echo = queryEcho(
      fromQs('app_id=A&metrics=users&dimensions=day&order=-users&days=7'),
      'Europe/Paris',
      undefined,
      { estimated: ['users'], source: 'query_rollup' },
    )
    expect(echo).toMatchObject({
      estimated: ['users'],
      source: 'query_rollup',
      app_ids: ['A'],
      metrics: ['users'],
      dimensions: ['day'],
      order: ['-users'],
      days: 7,
      limit: 50_000,
      time_zone: 'Europe/Paris',
    })
  })
})
