import { describe, expect, it } from 'vitest'
import {
  applyChanges,
  diffAttributes,
  toWire,
  type Attributes,
} from '../../pipelines/profiles/apply-changes.ts'
import { attributesFromRow, toProfileRow } from '../../pipelines/profiles/stored-profile.ts'
import { validatePatch, type NormalizedChange } from '../../pipelines/profiles/validate-changes.ts'
import type { ProfileValue } from '../../schemas/profiles.ts'

const state = (o: Record<string, ProfileValue>): Attributes => new Map(Object.entries(o))
const str = (value: string): ProfileValue => ({ type: 'string', value })
const int = (value: number): ProfileValue => ({ type: 'integer', value })
const date = (value: string): ProfileValue => ({ type: 'date', value })
const set = (value: string[] | number[]): ProfileValue => ({ type: 'set', value })

/** The changes a request body normalises to, as the writer receives them. */
function changesOf(list: unknown[]): NormalizedChange[] {
  const result = validatePatch({ changes: list }, 'org')
  if (result.kind !== 'ok' || result.ignored.length > 0)
    throw new Error(`test changes invalid: ${JSON.stringify(result)}`)
  return result.changes
}

const BASE = state({
  name: str('Ann'),
  visits: int(10),
  since: date('2020-01-01'),
  tags: set(['a', 'b']),
  nums: set([1, 2]),
})

describe('applyChanges: each op', () => {
  const cases: [string, Attributes | null, unknown[], Record<string, unknown>, string[]][] = [
    // name, before, changes, expected attributes (wire), expected ignored reasons
    ['assign creates a profile', null, [{ op: 'assign', attr: 'a', value: 1 }], { a: 1 }, []],
    [
      'assign replaces any type',
      BASE,
      [{ op: 'assign', attr: 'tags', value: 'now a string' }],
      { ...toWire(BASE), tags: 'now a string' },
      [],
    ],
    [
      'delete removes one key only',
      BASE,
      [{ op: 'delete', attr: 'name' }],
      { visits: 10, since: '2020-01-01', tags: ['a', 'b'], nums: [1, 2] },
      [],
    ],
    ['delete of an absent key is a no-op', BASE, [{ op: 'delete', attr: 'nope' }], toWire(BASE), []],
    ['delete on no profile leaves an empty profile', null, [{ op: 'delete', attr: 'x' }], {}, []],
    [
      'increment an integer',
      BASE,
      [{ op: 'increment', attr: 'visits', value: 5 }],
      { ...toWire(BASE), visits: 15 },
      [],
    ],
    [
      'increment negative',
      BASE,
      [{ op: 'increment', attr: 'visits', value: -12 }],
      { ...toWire(BASE), visits: -2 },
      [],
    ],
    [
      'increment an absent key starts at 0',
      BASE,
      [{ op: 'increment', attr: 'n', value: 3 }],
      { ...toWire(BASE), n: 3 },
      [],
    ],
    [
      'increment a string is refused',
      BASE,
      [{ op: 'increment', attr: 'name', value: 1 }],
      toWire(BASE),
      ['increment applies to integer attributes only; name is a string'],
    ],
    [
      'increment a date is refused',
      BASE,
      [{ op: 'increment', attr: 'since', value: 1 }],
      toWire(BASE),
      ['increment applies to integer attributes only; since is a date'],
    ],
    [
      'increment a set is refused',
      BASE,
      [{ op: 'increment', attr: 'nums', value: 1 }],
      toWire(BASE),
      ['increment applies to integer attributes only; nums is a set'],
    ],
    [
      'increment past 2^53 is refused',
      state({ n: int(9007199254740991) }),
      [{ op: 'increment', attr: 'n', value: 1 }],
      { n: 9007199254740991 },
      ['the result is out of range (at most 2^53 - 1 in magnitude)'],
    ],
    [
      'set-add to an absent key creates the set',
      BASE,
      [{ op: 'set-add', attr: 's', value: ['x', 'y'] }],
      { ...toWire(BASE), s: ['x', 'y'] },
      [],
    ],
    [
      'set-add unions in order',
      BASE,
      [{ op: 'set-add', attr: 'tags', value: ['c', 'a'] }],
      { ...toWire(BASE), tags: ['a', 'b', 'c'] },
      [],
    ],
    [
      'set-add integers',
      BASE,
      [{ op: 'set-add', attr: 'nums', value: [3, 1] }],
      { ...toWire(BASE), nums: [1, 2, 3] },
      [],
    ],
    [
      'set-add strings to integers makes strings',
      BASE,
      [{ op: 'set-add', attr: 'nums', value: ['x', '2'] }],
      { ...toWire(BASE), nums: ['1', '2', 'x'] },
      [],
    ],
    [
      'set-add integers to strings makes strings',
      BASE,
      [{ op: 'set-add', attr: 'tags', value: [7] }],
      { ...toWire(BASE), tags: ['a', 'b', '7'] },
      [],
    ],
    [
      'set-add to an empty set',
      state({ s: set([]) }),
      [{ op: 'set-add', attr: 's', value: [4] }],
      { s: [4] },
      [],
    ],
    [
      'set-add to a string is refused',
      BASE,
      [{ op: 'set-add', attr: 'name', value: ['x'] }],
      toWire(BASE),
      ['set-add applies to sets only; name is a string'],
    ],
    [
      'set-add to an integer is refused',
      BASE,
      [{ op: 'set-add', attr: 'visits', value: [1] }],
      toWire(BASE),
      ['set-add applies to sets only; visits is an integer'],
    ],
    [
      'set-remove',
      BASE,
      [{ op: 'set-remove', attr: 'tags', value: ['a', 'zz'] }],
      { ...toWire(BASE), tags: ['b'] },
      [],
    ],
    [
      'set-remove the last value leaves an empty set',
      BASE,
      [{ op: 'set-remove', attr: 'tags', value: ['a', 'b'] }],
      { ...toWire(BASE), tags: [] },
      [],
    ],
    [
      'set-remove integers',
      BASE,
      [{ op: 'set-remove', attr: 'nums', value: 2 }],
      { ...toWire(BASE), nums: [1] },
      [],
    ],
    [
      'set-remove matches integers by their text',
      BASE,
      [{ op: 'set-remove', attr: 'nums', value: ['1'] }],
      { ...toWire(BASE), nums: [2] },
      [],
    ],
    [
      'set-remove from an absent key is a no-op',
      BASE,
      [{ op: 'set-remove', attr: 'zz', value: ['a'] }],
      toWire(BASE),
      [],
    ],
    [
      'set-remove from a date is refused',
      BASE,
      [{ op: 'set-remove', attr: 'since', value: ['x'] }],
      toWire(BASE),
      ['set-remove applies to sets only; since is a date'],
    ],
  ]
  it.each(cases)('%s', (_name, before, list, expected, reasons) => {
    const result = applyChanges(before, changesOf(list))
    expect(toWire(result.attributes)).toEqual(expected)
    expect(result.ignored.map((i) => i.reason)).toEqual(reasons)
  })

  it('does not modify the state it is given', () => {
    const before = state({ n: int(1), s: set(['a']) })
    applyChanges(
      before,
      changesOf([
        { op: 'increment', attr: 'n', value: 1 },
        { op: 'set-add', attr: 's', value: 'b' },
      ]),
    )
    expect(toWire(before)).toEqual({ n: 1, s: ['a'] })
  })
})

describe('applyChanges: order', () => {
  it('applies changes in request order, each on the result of the previous', () => {
    const result = applyChanges(
      null,
      changesOf([
        { op: 'increment', attr: 'n', value: 2 },
        { op: 'assign', attr: 'n', value: 10 },
        { op: 'increment', attr: 'n', value: 1 },
        { op: 'set-add', attr: 's', value: ['a', 'b'] },
        { op: 'set-remove', attr: 's', value: 'a' },
        { op: 'set-add', attr: 's', value: 'a' },
        { op: 'delete', attr: 'gone' },
        { op: 'assign', attr: 'gone', value: 'back' },
        { op: 'delete', attr: 'gone' },
      ]),
    )
    expect(toWire(result.attributes)).toEqual({ n: 11, s: ['b', 'a'] })
  })

  it('reports a refused change with its request index, and applies the rest', () => {
    const result = applyChanges(
      state({ name: str('Ann') }),
      changesOf([
        { op: 'assign', attr: 'a', value: 1 },
        { op: 'increment', attr: 'name', value: 1 },
        { op: 'increment', attr: 'a', value: 1 },
      ]),
    )
    expect(toWire(result.attributes)).toEqual({ name: 'Ann', a: 2 })
    expect(result.ignored).toEqual([
      {
        index: 1,
        attr: 'name',
        op: 'increment',
        reason: 'increment applies to integer attributes only; name is a string',
      },
    ])
  })

  it('the attributes syntax assigns and deletes; later keys see earlier ones', () => {
    const body = validatePatch({ attributes: { a: 'x', b: null, ' a': 'y' } }, 'org')
    if (body.kind !== 'ok') throw new Error('invalid')
    const result = applyChanges(state({ b: int(1), c: int(2) }), body.changes)
    expect(toWire(result.attributes)).toEqual({ c: 2, a: 'y' })
  })
})

describe('diffAttributes', () => {
  it.each([
    ['creation', null, state({ a: int(1) }), { updates: { a: 1 }, deletes: [] }],
    ['no change', BASE, BASE, { updates: {}, deletes: [] }],
    [
      'a change and a delete',
      state({ a: int(1), b: str('x') }),
      state({ a: int(2) }),
      { updates: { a: 2 }, deletes: ['b'] },
    ],
    ['profile deleted', state({ a: int(1), b: str('x') }), null, { updates: {}, deletes: ['a', 'b'] }],
    [
      'a string that became a date',
      state({ d: str('2020-01-01') }),
      state({ d: date('2020-01-01') }),
      { updates: { d: '2020-01-01' }, deletes: [] },
    ],
    [
      'a set reordered counts as changed',
      state({ s: set(['a', 'b']) }),
      state({ s: set(['b', 'a']) }),
      { updates: { s: ['b', 'a'] }, deletes: [] },
    ],
    ['same set', state({ s: set([1, 2]) }), state({ s: set([1, 2]) }), { updates: {}, deletes: [] }],
  ])('%s', (_name, before, after, expected) => {
    expect(diffAttributes(before, after)).toEqual(expected)
  })

  it('lists removed keys', () => {
    const after = new Map(BASE)
    after.delete('name')
    after.delete('tags')
    expect(diffAttributes(BASE, after)).toEqual({ updates: {}, deletes: ['name', 'tags'] })
  })
})

describe('stored rows', () => {
  it('round-trips every type, keeping dates apart from strings', () => {
    const attributes = state({
      s: str('2020-01-01'),
      d: date('2020-01-01'),
      i: int(-5),
      ss: set(['x']),
      is: set([1, 2]),
      $email: str('Ann@Example.COM'),
    })
    const row = toProfileRow(
      {
        profiledb_id: 1,
        org_id: 1,
        app_id: '',
        customer_id: 'c',
        updated_at: 0,
        source_partition: 0,
        source_offset: '0',
        version: 1,
      },
      attributes,
    )
    expect(JSON.parse(row.attributes)).toEqual({
      s: '2020-01-01',
      d: '2020-01-01',
      i: -5,
      ss: ['x'],
      is: [1, 2],
      $email: 'Ann@Example.COM',
    })
    expect(row.attribute_types).toEqual({
      s: 'string',
      d: 'date',
      i: 'integer',
      ss: 'set',
      is: 'set',
      $email: 'string',
    })
    expect(row.email).toBe('ann@example.com')
    expect(row.deleted).toBe(0)
    expect(attributesFromRow(row.attributes, row.attribute_types)).toEqual(attributes)
  })

  it('a deleted profile is an empty tombstone', () => {
    const row = toProfileRow(
      {
        profiledb_id: 1,
        org_id: 1,
        app_id: 'a',
        customer_id: 'c',
        updated_at: 0,
        source_partition: 0,
        source_offset: '0',
        version: 1,
      },
      null,
    )
    expect(row).toMatchObject({ attributes: '{}', attribute_types: {}, email: '', deleted: 1 })
  })
})
