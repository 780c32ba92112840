import { describe, expect, it } from 'vitest'
import { isEmail, parseIsoDate } from '../../pipelines/profiles/attribute-rules.ts'
import { validatePatch, type NormalizedChange } from '../../pipelines/profiles/validate-changes.ts'
import { FORBIDDEN_KEY_STARTS, type ProfileValue } from '../../schemas/profiles.ts'

const attrs = (attributes: Record<string, unknown>, scope: 'org' | 'app' = 'org') =>
  validatePatch({ attributes }, scope)

/** One assignment through the attributes syntax: the stored value, or the reason it is ignored. */
function assignOne(key: string, value: unknown, scope: 'org' | 'app' = 'org'): ProfileValue | string {
  const result = attrs({ [key]: value }, scope)
  if (result.kind === 'ok') {
    const change = result.changes[0]!
    if (change.op !== 'assign') throw new Error(`expected an assign, got ${change.op}`)
    return change.value
  }
  if (result.kind === 'none-valid') return result.ignored[0]!.reason
  return result.reason
}

const str = (value: string): ProfileValue => ({ type: 'string', value })
const int = (value: number): ProfileValue => ({ type: 'integer', value })
const date = (value: string): ProfileValue => ({ type: 'date', value })
const set = (value: string[] | number[]): ProfileValue => ({ type: 'set', value })

describe('attribute keys', () => {
  const cases: [string, string, ProfileValue | string][] = [
    ['plain key', 'plan', str('x')],
    ['trimmed', '  plan \t', str('x')],
    ['128 characters', 'k'.repeat(128), str('x')],
    ['128 code points of astral characters', '😀'.repeat(128), str('x')],
    ['129 characters', 'k'.repeat(129), 'attribute key is longer than 128 characters'],
    [
      '129 after trimming is still too long',
      ` ${'k'.repeat(129)} `,
      'attribute key is longer than 128 characters',
    ],
    ['empty', '', 'attribute key is empty'],
    ['blank', '   ', 'attribute key is empty'],
    ['digit first', '1st', str('x')],
    ['symbol inside', 'a.b-c$d', str('x')],
    ['$email is special', '$email', 'x'], // value check, see below
    ['other $ key', '$plan', "attribute key must not begin with '$'"],
    ['$Email (case matters)', '$Email', "attribute key must not begin with '$'"],
  ]
  it.each(cases)('%s', (_name, key, expected) => {
    if (key === '$email') return
    expect(assignOne(key, 'x')).toEqual(expected)
  })

  it.each([...FORBIDDEN_KEY_STARTS])('a key may not begin with %s', (symbol) => {
    expect(assignOne(`${symbol}key`, 'x')).toBe(`attribute key must not begin with '${symbol}'`)
  })

  it('checks the key after trimming', () => {
    expect(assignOne('  _key', 'x')).toBe("attribute key must not begin with '_'")
    expect(attrs({ ' a ': 1 })).toEqual({
      kind: 'ok',
      changes: [{ index: 0, op: 'assign', attr: 'a', value: int(1) }],
      ignored: [],
    })
  })
})

describe('attribute values', () => {
  const cases: [string, unknown, ProfileValue | string][] = [
    ['string', 'gold', str('gold')],
    ['string trimmed', '  gold \n', str('gold')],
    ['255 characters', 's'.repeat(255), str('s'.repeat(255))],
    ['256 characters', 's'.repeat(256), 'string value is longer than 255 characters'],
    ['255 after trimming', `  ${'s'.repeat(255)}  `, str('s'.repeat(255))],
    ['empty string', '', 'string value is empty'],
    ['blank string', '   ', 'string value is empty'],
    ['integer', 42, int(42)],
    ['negative integer', -7, int(-7)],
    ['zero', 0, int(0)],
    ['decimals truncated', 3.99, int(3)],
    ['negative decimals truncated toward zero', -3.99, int(-3)],
    ['-0.5 becomes 0', -0.5, int(0)],
    ['largest safe integer', 9007199254740991, int(9007199254740991)],
    ['beyond 2^53', 1e20, 'integer value is out of range (at most 2^53 - 1 in magnitude)'],
    ['numeric string stays a string', '42', str('42')],
    ['date', '2024-01-15', date('2024-01-15')],
    ['date-time UTC', '2024-01-15T10:20:30Z', date('2024-01-15')],
    ['date-time with fraction', '2024-01-15T10:20:30.123Z', date('2024-01-15')],
    ['date-time with offset keeps the written date', '2024-01-15T23:30:00-05:00', date('2024-01-15')],
    ['date-time without zone', '2024-01-15T23:30', date('2024-01-15')],
    ['date-time with space', '2024-01-15 08:00:00', date('2024-01-15')],
    ['date trimmed', ' 2024-01-15 ', date('2024-01-15')],
    ['leap day', '2024-02-29', date('2024-02-29')],
    ['not a leap year', '2023-02-29', 'not a valid date: "2023-02-29"'],
    ['month 13', '2024-13-01', 'not a valid date: "2024-13-01"'],
    ['hour 25', '2024-01-15T25:00:00Z', 'not a valid date: "2024-01-15T25:00:00Z"'],
    ['date inside text stays a string', 'born 2024-01-15', str('born 2024-01-15')],
    ['basic format stays a string', '20240115', str('20240115')],
    ['set of strings', ['a', 'b'], set(['a', 'b'])],
    ['set of integers', [3, 1, 2], set([3, 1, 2])],
    ['set duplicates collapsed', ['a', 'b', 'a'], set(['a', 'b'])],
    ['set integer duplicates collapsed', [1, 2, 1, 2.5], set([1, 2])],
    ['mixed set becomes strings', [1, 'a', 2], set(['1', 'a', '2'])],
    ['mixed set collapses after conversion', [1, '1', 'b'], set(['1', 'b'])],
    ['set strings trimmed', [' a', 'a '], set(['a'])],
    ['empty set', [], set([])],
    ['set of dates stays strings', ['2024-01-15'], set(['2024-01-15'])],
    [
      'set with a boolean',
      ['a', true],
      'set element 1: set values must be strings or integers, not a boolean',
    ],
    ['set with null', [null], 'set element 0: set values must be strings or integers, not null'],
    [
      'set with a nested array',
      [['a']],
      'set element 0: set values must be strings or integers, not an array',
    ],
    ['set with an empty string', ['a', ' '], 'set element 1: string value is empty'],
    [
      'set with a long string',
      ['s'.repeat(256)],
      'set element 0: string value is longer than 255 characters',
    ],
    ['boolean', true, 'a value must be a string, an integer, an ISO 8601 date or an array, not a boolean'],
    ['object', { a: 1 }, 'a value must be a string, an integer, an ISO 8601 date or an array, not an object'],
  ]
  it.each(cases)('%s', (_name, value, expected) => {
    expect(assignOne('attr', value)).toEqual(expected)
  })
})

describe('special profile ids', () => {
  const cases: [string, string, unknown, 'org' | 'app', ProfileValue | string][] = [
    ['$email', '$email', 'ann@example.com', 'org', str('ann@example.com')],
    ['$email trimmed, case kept', '$email', ' Ann@Example.COM ', 'org', str('Ann@Example.COM')],
    ['$email invalid', '$email', 'not-an-address', 'org', '$email must be a valid e-mail address'],
    [
      '$email without a domain dot',
      '$email',
      'ann@localhost',
      'org',
      '$email must be a valid e-mail address',
    ],
    ['$email two addresses', '$email', 'a@x.com, b@x.com', 'org', '$email must be a valid e-mail address'],
    ['$email as a set', '$email', ['a@x.com'], 'org', '$email must be a single string'],
    ['$email as a number', '$email', 5, 'org', '$email must be a single string'],
    ['$full_name', '$full_name', 'Ann Lee', 'org', str('Ann Lee')],
    ['$first_name stays a string even if date-shaped', '$first_name', '2024-01-15', 'org', str('2024-01-15')],
    ['$last_name empty', '$last_name', ' ', 'org', 'string value is empty'],
    ['$last_name as a set', '$last_name', ['Lee', 'Li'], 'org', '$last_name must be a single string'],
    [
      '$email at app level',
      '$email',
      'ann@example.com',
      'app',
      '$email can only be set on the org-level profile (/v1/profiles/:customer_id)',
    ],
    [
      '$full_name at app level',
      '$full_name',
      'Ann',
      'app',
      '$full_name can only be set on the org-level profile (/v1/profiles/:customer_id)',
    ],
  ]
  it.each(cases)('%s', (_name, key, value, scope, expected) => {
    expect(assignOne(key, value, scope)).toEqual(expected)
  })

  it('deleting a special id is allowed at org level only', () => {
    expect(attrs({ $email: null })).toMatchObject({ kind: 'ok', changes: [{ op: 'delete', attr: '$email' }] })
    expect(attrs({ $email: null }, 'app')).toMatchObject({ kind: 'none-valid' })
  })

  it.each([
    ['ann@example.com', true],
    ['a.b+tag@sub.example.co.uk', true],
    ['a@b.c', true],
    ['@example.com', false],
    ['ann@', false],
    ['ann@@example.com', false],
    ['ann example@x.com', false],
    [`${'a'.repeat(65)}@x.com`, false],
  ])('isEmail(%s) is %s', (s, expected) => expect(isEmail(s)).toBe(expected))
})

describe('parseIsoDate', () => {
  it.each([
    ['2024-01-15', '2024-01-15'],
    ['2024-01-15T00:00:00+0530', '2024-01-15'],
    ['2024-01-15t10:00z', '2024-01-15'],
    ['2024-01-15T10Z', '2024-01-15'],
    ['2024-01-15T10:00:00.000+00:00', '2024-01-15'],
    ['2024-01-15T10:00+24:00', null],
    ['2000-02-29', '2000-02-29'],
    ['1900-02-29', null],
    ['2024-04-31', null],
    ['2024-01-15T10:60', null],
    ['0000-01-01', null],
    ['2024-1-5', undefined],
    ['2024-01', undefined],
    ['hello', undefined],
  ])('%s → %s', (s, expected) => expect(parseIsoDate(s)).toBe(expected))
})

describe('the attributes syntax', () => {
  it('assigns valid keys, deletes null ones, and lists the others by position', () => {
    expect(attrs({ plan: 'gold', age: 30.5, gone: null, _hidden: 1, flag: false, tags: ['x', 'x'] })).toEqual(
      {
        kind: 'ok',
        changes: [
          { index: 0, op: 'assign', attr: 'plan', value: str('gold') },
          { index: 1, op: 'assign', attr: 'age', value: int(30) },
          { index: 2, op: 'delete', attr: 'gone' },
          { index: 5, op: 'assign', attr: 'tags', value: set(['x']) },
        ],
        ignored: [
          { index: 3, attr: '_hidden', op: 'assign', reason: "attribute key must not begin with '_'" },
          {
            index: 4,
            attr: 'flag',
            op: 'assign',
            reason: 'a value must be a string, an integer, an ISO 8601 date or an array, not a boolean',
          },
        ],
      },
    )
  })

  it('reports an invalid null key as an ignored delete', () => {
    expect(attrs({ '.x': null })).toEqual({
      kind: 'none-valid',
      reason: 'no valid assignment or change',
      ignored: [{ index: 0, attr: '.x', op: 'delete', reason: "attribute key must not begin with '.'" }],
    })
  })

  it('an empty object has nothing valid', () => {
    expect(attrs({})).toEqual({ kind: 'none-valid', reason: 'no valid assignment or change', ignored: [] })
  })
})

describe('the changes syntax', () => {
  const changes = (list: unknown[], scope: 'org' | 'app' = 'org') => validatePatch({ changes: list }, scope)

  const cases: [string, unknown, NormalizedChange | string][] = [
    ['delete', { op: 'delete', attr: 'a' }, { index: 0, op: 'delete', attr: 'a' }],
    ['delete ignores a value', { op: 'delete', attr: 'a', value: 5 }, { index: 0, op: 'delete', attr: 'a' }],
    [
      'assign string',
      { op: 'assign', attr: ' a ', value: ' v ' },
      { index: 0, op: 'assign', attr: 'a', value: str('v') },
    ],
    [
      'assign date',
      { op: 'assign', attr: 'd', value: '2024-03-01T12:00:00Z' },
      { index: 0, op: 'assign', attr: 'd', value: date('2024-03-01') },
    ],
    [
      'assign set',
      { op: 'assign', attr: 's', value: [2, 2, 1] },
      { index: 0, op: 'assign', attr: 's', value: set([2, 1]) },
    ],
    [
      'assign null',
      { op: 'assign', attr: 'a', value: null },
      'assign needs a value; use the delete op to remove an attribute',
    ],
    ['assign without value', { op: 'assign', attr: 'a' }, 'value is missing'],
    ['assign invalid value', { op: 'assign', attr: 'a', value: '' }, 'string value is empty'],
    ['increment', { op: 'increment', attr: 'n', value: 5 }, { index: 0, op: 'increment', attr: 'n', by: 5 }],
    [
      'increment negative',
      { op: 'increment', attr: 'n', value: -2 },
      { index: 0, op: 'increment', attr: 'n', by: -2 },
    ],
    [
      'increment truncated',
      { op: 'increment', attr: 'n', value: 2.7 },
      { index: 0, op: 'increment', attr: 'n', by: 2 },
    ],
    [
      'increment by a string',
      { op: 'increment', attr: 'n', value: '5' },
      'increment value must be an integer, not a string',
    ],
    ['increment without value', { op: 'increment', attr: 'n' }, 'value is missing'],
    [
      'increment by a set',
      { op: 'increment', attr: 'n', value: [1] },
      'increment value must be an integer, not an array',
    ],
    [
      'set-add array',
      { op: 'set-add', attr: 's', value: ['a', 'b', 'a'] },
      { index: 0, op: 'set-add', attr: 's', values: ['a', 'b'] },
    ],
    [
      'set-add one value',
      { op: 'set-add', attr: 's', value: 'a' },
      { index: 0, op: 'set-add', attr: 's', values: ['a'] },
    ],
    [
      'set-add one integer',
      { op: 'set-add', attr: 's', value: 7 },
      { index: 0, op: 'set-add', attr: 's', values: [7] },
    ],
    [
      'set-add mixed',
      { op: 'set-add', attr: 's', value: [1, 'a'] },
      { index: 0, op: 'set-add', attr: 's', values: ['1', 'a'] },
    ],
    [
      'set-add object',
      { op: 'set-add', attr: 's', value: { a: 1 } },
      'value must be an array of strings or integers, not an object',
    ],
    [
      'set-add bad element',
      { op: 'set-add', attr: 's', value: ['a', {}] },
      'set element 1: set values must be strings or integers, not an object',
    ],
    [
      'set-remove',
      { op: 'set-remove', attr: 's', value: ['a'] },
      { index: 0, op: 'set-remove', attr: 's', values: ['a'] },
    ],
    ['set-remove without value', { op: 'set-remove', attr: 's' }, 'value is missing'],
    [
      'unknown op',
      { op: 'multiply', attr: 'n', value: 2 },
      'op must be one of delete, assign, increment, set-add, set-remove',
    ],
    ['missing op', { attr: 'n', value: 2 }, 'op is missing'],
    ['missing attr', { op: 'delete' }, 'attr is missing'],
    ['attr not a string', { op: 'delete', attr: 5 }, 'attribute key must be a string'],
    ['bad key', { op: 'delete', attr: '#x' }, "attribute key must not begin with '#'"],
    ['not an object', 'assign', 'a change must be an object, not a string'],
    ['null item', null, 'a change must be an object, not null'],
    ['increment $email', { op: 'increment', attr: '$email', value: 1 }, '$email must be a single string'],
    [
      'set-add $first_name',
      { op: 'set-add', attr: '$first_name', value: ['A'] },
      '$first_name must be a single string',
    ],
    [
      'assign $email',
      { op: 'assign', attr: '$email', value: 'a@b.co' },
      { index: 0, op: 'assign', attr: '$email', value: str('a@b.co') },
    ],
    [
      'assign bad $email',
      { op: 'assign', attr: '$email', value: 'nope' },
      '$email must be a valid e-mail address',
    ],
    ['delete $email', { op: 'delete', attr: '$email' }, { index: 0, op: 'delete', attr: '$email' }],
  ]
  it.each(cases)('%s', (_name, item, expected) => {
    const result = changes([item])
    if (typeof expected === 'string') {
      expect(result.kind).toBe('none-valid')
      if (result.kind === 'none-valid') expect(result.ignored[0]!.reason).toBe(expected)
    } else {
      expect(result).toEqual({ kind: 'ok', changes: [expected], ignored: [] })
    }
  })

  it('keeps the valid changes in order and reports each ignored one with its position, attr and op', () => {
    expect(
      changes([
        { op: 'assign', attr: 'a', value: 1 },
        { op: 'explode', attr: 'b' },
        { op: 'increment', attr: 'a', value: 2 },
        { op: 'set-add', attr: '@s', value: ['x'] },
        42,
        { op: 'delete', attr: 'c' },
      ]),
    ).toEqual({
      kind: 'ok',
      changes: [
        { index: 0, op: 'assign', attr: 'a', value: int(1) },
        { index: 2, op: 'increment', attr: 'a', by: 2 },
        { index: 5, op: 'delete', attr: 'c' },
      ],
      ignored: [
        {
          index: 1,
          attr: 'b',
          op: 'explode',
          reason: 'op must be one of delete, assign, increment, set-add, set-remove',
        },
        { index: 3, attr: '@s', op: 'set-add', reason: "attribute key must not begin with '@'" },
        { index: 4, attr: null, op: null, reason: 'a change must be an object, not a number' },
      ],
    })
  })

  it('special ids at app level are ignored for every op', () => {
    const result = changes([{ op: 'delete', attr: '$last_name' }], 'app')
    expect(result).toEqual({
      kind: 'none-valid',
      reason: 'no valid assignment or change',
      ignored: [
        {
          index: 0,
          attr: '$last_name',
          op: 'delete',
          reason: '$last_name can only be set on the org-level profile (/v1/profiles/:customer_id)',
        },
      ],
    })
  })

  it('an empty list has nothing valid', () => {
    expect(changes([])).toEqual({ kind: 'none-valid', reason: 'no valid assignment or change', ignored: [] })
  })
})

describe('the body', () => {
  it.each([
    [
      'both syntaxes',
      { attributes: { a: 1 }, changes: [] },
      'use either "attributes" or "changes" in one request, not both',
    ],
    [
      'neither syntax',
      { other: 1 },
      'request body must have "attributes" (an object) or "changes" (an array)',
    ],
    ['empty body', {}, 'request body must have "attributes" (an object) or "changes" (an array)'],
    ['attributes an array', { attributes: [1] }, '"attributes" must be an object, not an array'],
    ['attributes null', { attributes: null }, '"attributes" must be an object, not null'],
    ['changes an object', { changes: { op: 'delete' } }, '"changes" must be an array, not an object'],
    ['not an object', [1, 2], 'request body must be a JSON object'],
    ['a string', 'attributes', 'request body must be a JSON object'],
    ['null', null, 'request body must be a JSON object'],
  ])('%s is malformed', (_name, body, reason) => {
    expect(validatePatch(body, 'org')).toEqual({ kind: 'malformed', reason })
  })
})
