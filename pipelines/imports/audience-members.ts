import { charsAtMost } from '../../schemas/events.ts'
import { IMPORT_LIMITS, isMemberIdType, type MemberIdType } from '../../schemas/imports.ts'
import { canonicalDeviceId } from '../../schemas/uuid.ts'
import { isEmail } from '../profiles/attribute-rules.ts'

/**
 * The rows of an audience import (pure): one member per row, a customer id, an e-mail or an
 * install id, normalised as the tables hold them (an e-mail trimmed and lowercased, as
 * profiles.email; an install id that is a UUID in its canonical spelling, as devices.install_uuid).
 */

export type MemberResult = { ok: true; member: string } | { ok: false; member?: string; reason: string }

export function normaliseMember(type: MemberIdType, raw: unknown): MemberResult {
  if (typeof raw !== 'string') return { ok: false, reason: `${type} must be a string` }
  const value = raw.trim()
  if (value === '') return { ok: false, member: raw, reason: `${type} is empty` }
  if (!charsAtMost(value, type === 'email' ? 254 : IMPORT_LIMITS.memberMaxChars))
    return { ok: false, member: raw, reason: `${type} is too long` }
  switch (type) {
    case 'email':
      return isEmail(value)
        ? { ok: true, member: value.toLowerCase() }
        : { ok: false, member: raw, reason: 'not a valid e-mail address' }
    case 'install_id':
      return { ok: true, member: canonicalDeviceId(value) }
    case 'customer_id':
      return { ok: true, member: value }
  }
}

/** A CSV header naming the one column (`customer_id`, `email` or `install_id`), or undefined. */
export function memberHeader(cells: readonly string[]): MemberIdType | undefined {
  const name = cells.length === 1 ? cells[0]!.trim().replace(/^\uFEFF/, '') : undefined
  return isMemberIdType(name) ? name : undefined
}

/** One JSON line: an object with one identifier field of the list's kind. */
export function jsonMember(
  text: string,
  type: MemberIdType | undefined,
): MemberResult & { type?: MemberIdType } {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return { ok: false, reason: 'the line is not JSON' }
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value))
    return { ok: false, reason: 'the line must be a JSON object' }
  const fields = Object.keys(value).filter(isMemberIdType)
  if (fields.length !== 1)
    return { ok: false, reason: 'the line must have exactly one of customer_id, email, install_id' }
  const field = fields[0]!
  if (type !== undefined && field !== type)
    return { ok: false, reason: `this import lists ${type}s; the line has ${field}` }
  return { ...normaliseMember(field, (value as Record<string, unknown>)[field]), type: field }
}
