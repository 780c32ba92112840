import { isChangeOp, isSpecialKey, type IgnoredChange, type ProfileValue } from '../../schemas/profiles.ts'
import {
  checkIncrement,
  checkKey,
  checkSetOperand,
  checkSpecialValue,
  checkValue,
  jsonType,
  type Checked,
} from './attribute-rules.ts'

/**
 * Stage 1 of a profile PATCH, at the edge (pure): the request body → the changes to apply, in
 * order, normalised (trimmed keys, typed values), and the items ignored with their reasons.
 *
 * Both syntaxes come out as one list of changes; the attributes syntax is `assign` per key, or
 * `delete` for a null. `index` is the item's position in the `changes` array, or in the
 * `attributes` object's key order (as JSON.parse enumerates it: integer-like keys first).
 */

export type NormalizedChange =
  | { index: number; op: 'assign'; attr: string; value: ProfileValue }
  | { index: number; op: 'delete'; attr: string }
  | { index: number; op: 'increment'; attr: string; by: number }
  | { index: number; op: 'set-add' | 'set-remove'; attr: string; values: string[] | number[] }

export type ProfileScope = 'org' | 'app'

export type ValidatedPatch =
  | { kind: 'ok'; changes: NormalizedChange[]; ignored: IgnoredChange[] }
  /** The body is not a PATCH at all (not an object, both syntaxes, neither): a plain 400. */
  | { kind: 'malformed'; reason: string }
  /** Well-formed, but no item is valid: a 400 that lists every ignored item. */
  | { kind: 'none-valid'; reason: string; ignored: IgnoredChange[] }

export function validatePatch(body: unknown, scope: ProfileScope): ValidatedPatch {
  if (body === null || typeof body !== 'object' || Array.isArray(body))
    return { kind: 'malformed', reason: 'request body must be a JSON object' }
  const hasAttributes = 'attributes' in body
  const hasChanges = 'changes' in body
  if (hasAttributes && hasChanges)
    return { kind: 'malformed', reason: 'use either "attributes" or "changes" in one request, not both' }
  if (!hasAttributes && !hasChanges)
    return {
      kind: 'malformed',
      reason: 'request body must have "attributes" (an object) or "changes" (an array)',
    }

  const changes: NormalizedChange[] = []
  const ignored: IgnoredChange[] = []
  if (hasAttributes) {
    const attributes = body.attributes
    if (attributes === null || typeof attributes !== 'object' || Array.isArray(attributes))
      return { kind: 'malformed', reason: `"attributes" must be an object, not ${jsonType(attributes)}` }
    for (const [index, [attr, value]] of Object.entries(attributes).entries()) {
      const op = value === null ? 'delete' : 'assign'
      const checked = checkAttributeItem(attr, value, scope, index)
      if (checked.ok) changes.push(checked.value)
      else ignored.push({ index, attr, op, reason: checked.reason })
    }
  } else {
    const list = body.changes
    if (!Array.isArray(list))
      return { kind: 'malformed', reason: `"changes" must be an array, not ${jsonType(list)}` }
    for (const [index, item] of list.entries()) {
      const checked = checkChangeItem(item, scope, index)
      if (checked.ok) {
        changes.push(checked.value)
        continue
      }
      const fields = item !== null && typeof item === 'object' ? (item as Record<string, unknown>) : {}
      ignored.push({
        index,
        attr: typeof fields.attr === 'string' ? fields.attr : null,
        op: typeof fields.op === 'string' ? fields.op : null,
        reason: checked.reason,
      })
    }
  }
  if (changes.length === 0) return { kind: 'none-valid', reason: 'no valid assignment or change', ignored }
  return { kind: 'ok', changes, ignored }
}

function checkAttributeItem(
  rawKey: string,
  raw: unknown,
  scope: ProfileScope,
  index: number,
): Checked<NormalizedChange> {
  const key = checkKey(rawKey)
  if (!key.ok) return key
  const attr = key.value
  const special = checkSpecialScope(attr, scope)
  if (special) return special
  if (raw === null) return { ok: true, value: { index, op: 'delete', attr } }
  const value = isSpecialKey(attr) ? checkSpecialValue(attr, raw) : checkValue(raw)
  return value.ok ? { ok: true, value: { index, op: 'assign', attr, value: value.value } } : value
}

function checkChangeItem(item: unknown, scope: ProfileScope, index: number): Checked<NormalizedChange> {
  if (item === null || typeof item !== 'object' || Array.isArray(item))
    return { ok: false, reason: `a change must be an object, not ${jsonType(item)}` }
  const { op, attr: rawKey, value: raw } = item as Record<string, unknown>
  if (!isChangeOp(op))
    return {
      ok: false,
      reason:
        op === undefined
          ? 'op is missing'
          : 'op must be one of delete, assign, increment, set-add, set-remove',
    }
  if (rawKey === undefined) return { ok: false, reason: 'attr is missing' }
  const key = checkKey(rawKey)
  if (!key.ok) return key
  const attr = key.value
  const special = checkSpecialScope(attr, scope)
  if (special) return special
  switch (op) {
    case 'delete':
      return { ok: true, value: { index, op, attr } }
    case 'assign': {
      if (raw === null)
        return { ok: false, reason: 'assign needs a value; use the delete op to remove an attribute' }
      const value = isSpecialKey(attr) ? checkSpecialValue(attr, raw) : checkValue(raw)
      return value.ok ? { ok: true, value: { index, op, attr, value: value.value } } : value
    }
    case 'increment': {
      if (isSpecialKey(attr)) return { ok: false, reason: `${attr} must be a single string` }
      const by = checkIncrement(raw)
      return by.ok ? { ok: true, value: { index, op, attr, by: by.value } } : by
    }
    case 'set-add':
    case 'set-remove': {
      if (isSpecialKey(attr)) return { ok: false, reason: `${attr} must be a single string` }
      const values = checkSetOperand(raw)
      return values.ok ? { ok: true, value: { index, op, attr, values: values.value } } : values
    }
  }
}

/** The special ids are not scoped by app: they are set through the org-level path only. */
function checkSpecialScope(attr: string, scope: ProfileScope): { ok: false; reason: string } | undefined {
  if (scope === 'app' && isSpecialKey(attr))
    return {
      ok: false,
      reason: `${attr} can only be set on the org-level profile (/v1/profiles/:customer_id)`,
    }
  return undefined
}
