import type { IgnoredChange, ProfileValue, WireValue } from '../../schemas/profiles.ts'
import type { NormalizedChange } from './validate-changes.ts'

/** A profile's attributes, in the order they were first set. */
export type Attributes = ReadonlyMap<string, ProfileValue>

export interface Applied {
  attributes: Map<string, ProfileValue>
  /** Changes valid on their own that the profile's current state refuses (e.g. increment of a string). */
  ignored: IgnoredChange[]
}

/**
 * Stage 2 of a profile PATCH, in the writer (pure): the current attributes (null when there is no
 * profile) and one request's changes → the new attributes. Changes apply in order, each to the
 * result of the previous one; a change the state refuses is skipped and reported, the rest apply.
 */
export function applyChanges(current: Attributes | null, changes: readonly NormalizedChange[]): Applied {
  const attributes = new Map(current ?? [])
  const ignored: IgnoredChange[] = []
  for (const change of changes) {
    const refused = applyOne(attributes, change)
    if (refused) ignored.push({ index: change.index, attr: change.attr, op: change.op, reason: refused })
  }
  return { attributes, ignored }
}

/** Applies one change in place; returns why it was refused, or undefined. */
function applyOne(attributes: Map<string, ProfileValue>, change: NormalizedChange): string | undefined {
  const existing = attributes.get(change.attr)
  switch (change.op) {
    case 'assign':
      attributes.set(change.attr, change.value)
      return undefined
    case 'delete':
      attributes.delete(change.attr)
      return undefined
    case 'increment': {
      if (existing === undefined) {
        attributes.set(change.attr, { type: 'integer', value: change.by })
        return undefined
      }
      if (existing.type !== 'integer')
        return `increment applies to integer attributes only; ${change.attr} is ${article(existing.type)}`
      const sum = existing.value + change.by
      if (!Number.isSafeInteger(sum)) return 'the result is out of range (at most 2^53 - 1 in magnitude)'
      attributes.set(change.attr, { type: 'integer', value: sum })
      return undefined
    }
    case 'set-add': {
      if (existing === undefined) {
        attributes.set(change.attr, { type: 'set', value: [...change.values] as string[] | number[] })
        return undefined
      }
      if (existing.type !== 'set')
        return `${change.op} applies to sets only; ${change.attr} is ${article(existing.type)}`
      attributes.set(change.attr, { type: 'set', value: union(existing.value, change.values) })
      return undefined
    }
    case 'set-remove': {
      if (existing === undefined) return undefined
      if (existing.type !== 'set')
        return `${change.op} applies to sets only; ${change.attr} is ${article(existing.type)}`
      const removed = new Set(change.values.map(String))
      const kept = (existing.value as (string | number)[]).filter((v) => !removed.has(String(v)))
      attributes.set(change.attr, { type: 'set', value: kept as string[] | number[] })
      return undefined
    }
  }
}

/** Set union in order; a set holding both strings and integers becomes a set of strings. */
function union(a: readonly (string | number)[], b: readonly (string | number)[]): string[] | number[] {
  const all = [...a, ...b]
  if (all.every((v) => typeof v === 'number')) return [...new Set(all)]
  if (all.every((v) => typeof v === 'string')) return [...new Set(all)]
  return [...new Set(all.map(String))]
}

const article = (type: ProfileValue['type']) => (type === 'integer' ? 'an integer' : `a ${type}`)

export interface AttributeDiff {
  /** Attribute → new value, for every attribute added or changed. */
  updates: Record<string, WireValue>
  /** Attributes removed. */
  deletes: string[]
}

/** What a change-log row records: the difference between two states (null = no profile). */
export function diffAttributes(before: Attributes | null, after: Attributes | null): AttributeDiff {
  const updates: Record<string, WireValue> = {}
  const deletes: string[] = []
  for (const [key, value] of after ?? []) {
    const old = before?.get(key)
    if (!old || !sameValue(old, value)) updates[key] = value.value
  }
  for (const key of before?.keys() ?? []) if (!after?.has(key)) deletes.push(key)
  return { updates, deletes }
}

function sameValue(a: ProfileValue, b: ProfileValue): boolean {
  if (a.type !== b.type) return false
  if (a.type === 'set' && b.type === 'set') {
    return a.value.length === b.value.length && a.value.every((v, i) => v === b.value[i])
  }
  return a.value === b.value
}

/** The attributes as a response body shows them (and as the JSON column stores them). */
export function toWire(attributes: Attributes): Record<string, WireValue> {
  const out: Record<string, WireValue> = {}
  for (const [key, value] of attributes) out[key] = value.value
  return out
}
