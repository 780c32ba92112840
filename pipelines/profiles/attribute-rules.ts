import { charLength, charsAtMost } from '../../schemas/events.ts'
import {
  FORBIDDEN_KEY_STARTS,
  PROFILE_LIMITS,
  type ProfileValue,
  type SpecialKey,
} from '../../schemas/profiles.ts'

/**
 * The spec's rules for attribute keys and values, as pure functions returning tagged results. The
 * reasons are the texts clients see in `ignored_changes`.
 */

export type Checked<T> = { ok: true; value: T } | { ok: false; reason: string }
const ok = <T>(value: T): Checked<T> => ({ ok: true, value })
const no = <T>(reason: string): Checked<T> => ({ ok: false, reason })

/** Trimmed, 1..128 characters, not beginning with punctuation; the four special names pass. */
export function checkKey(raw: unknown): Checked<string> {
  if (typeof raw !== 'string') return no('attribute key must be a string')
  const key = raw.trim()
  if (key === '') return no('attribute key is empty')
  if (!charsAtMost(key, PROFILE_LIMITS.keyMaxChars))
    return no(`attribute key is longer than ${PROFILE_LIMITS.keyMaxChars} characters`)
  const first = key[0]!
  if (FORBIDDEN_KEY_STARTS.includes(first) && !isSpecial(key)) {
    return no(`attribute key must not begin with '${first}'`)
  }
  return ok(key)
}

const isSpecial = (key: string) =>
  key === '$email' || key === '$full_name' || key === '$first_name' || key === '$last_name'

/**
 * A value of the attributes syntax or of an `assign`: a string (an ISO 8601 date-time becomes a
 * date), an integer (decimals truncated), or a set. `null` is handled by the caller.
 */
export function checkValue(raw: unknown): Checked<ProfileValue> {
  if (typeof raw === 'string') {
    const s = checkString(raw)
    if (!s.ok) return s
    const date = parseIsoDate(s.value)
    if (date === undefined) return ok({ type: 'string', value: s.value })
    if (date === null) return no(`not a valid date: ${JSON.stringify(s.value)}`)
    return ok({ type: 'date', value: date })
  }
  if (typeof raw === 'number') {
    const n = checkInteger(raw)
    return n.ok ? ok({ type: 'integer', value: n.value }) : n
  }
  if (Array.isArray(raw)) {
    const set = checkSet(raw)
    return set.ok ? ok({ type: 'set', value: set.value }) : set
  }
  if (raw === undefined) return no('value is missing')
  return no(`a value must be a string, an integer, an ISO 8601 date or an array, not ${jsonType(raw)}`)
}

export function checkString(raw: string): Checked<string> {
  const s = raw.trim()
  if (s === '') return no('string value is empty')
  if (!charsAtMost(s, PROFILE_LIMITS.stringMaxChars))
    return no(`string value is longer than ${PROFILE_LIMITS.stringMaxChars} characters`)
  return ok(s)
}

/** Truncates decimals; refuses what JSON numbers cannot carry exactly. */
export function checkInteger(raw: number): Checked<number> {
  const n = Math.trunc(raw)
  if (!Number.isSafeInteger(n)) return no('integer value is out of range (at most 2^53 - 1 in magnitude)')
  return ok(n + 0) // -0 becomes 0
}

/**
 * A set: strings and integers only; mixed types all become strings; duplicates are collapsed
 * (first occurrence kept, in order). Strings follow the string rules; one bad element refuses the
 * whole set, so a stored set is never something the client did not send.
 */
export function checkSet(raw: readonly unknown[]): Checked<string[] | number[]> {
  const items: (string | number)[] = []
  let strings = 0
  for (const [i, item] of raw.entries()) {
    if (typeof item === 'string') {
      const s = checkString(item)
      if (!s.ok) return no(`set element ${i}: ${s.reason}`)
      items.push(s.value)
      strings++
    } else if (typeof item === 'number') {
      const n = checkInteger(item)
      if (!n.ok) return no(`set element ${i}: ${n.reason}`)
      items.push(n.value)
    } else {
      return no(`set element ${i}: set values must be strings or integers, not ${jsonType(item)}`)
    }
  }
  if (strings === 0) return ok([...new Set(items as number[])])
  return ok([...new Set(items.map(String))])
}

/** The value of `set-add` / `set-remove`: an array, or one string or integer. */
export function checkSetOperand(raw: unknown): Checked<string[] | number[]> {
  if (Array.isArray(raw)) return checkSet(raw)
  if (typeof raw === 'string' || typeof raw === 'number') return checkSet([raw])
  if (raw === undefined) return no('value is missing')
  return no(`value must be an array of strings or integers, not ${jsonType(raw)}`)
}

export function checkIncrement(raw: unknown): Checked<number> {
  if (raw === undefined) return no('value is missing')
  if (typeof raw !== 'number') return no(`increment value must be an integer, not ${jsonType(raw)}`)
  return checkInteger(raw)
}

/**
 * `$email`, `$full_name`, `$first_name`, `$last_name`: one string each; `$email` one valid address.
 * Never turned into a date: these are names and addresses whatever they look like.
 */
export function checkSpecialValue(key: SpecialKey, raw: unknown): Checked<ProfileValue> {
  if (typeof raw !== 'string') return no(`${key} must be a single string`)
  const s = checkString(raw)
  if (!s.ok) return s
  if (key === '$email' && !isEmail(s.value)) return no('$email must be a valid e-mail address')
  return ok({ type: 'string', value: s.value })
}

// The WHATWG form-validation address syntax, with a dot required in the domain.
export const EMAIL =
  /^[A-Za-z0-9.!#$%&'*+/=?^_`{|}~-]+@[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]{0,61}[A-Za-z0-9])?)+$/

export function isEmail(s: string): boolean {
  if (charLength(s) > 254) return false
  const at = s.lastIndexOf('@')
  if (at < 1 || at > 64) return false
  return EMAIL.test(s)
}

// ISO 8601 extended calendar date, optionally with a time and zone (RFC 3339's space is accepted).
const ISO_DATE =
  /^(\d{4})-(\d{2})-(\d{2})(?:[Tt ](\d{2})(?::(\d{2})(?::(\d{2})(?:[.,]\d+)?)?)?(?:[Zz]|[+-](\d{2})(?::?(\d{2}))?)?)?$/

/**
 * `YYYY-MM-DD` for an ISO 8601 date or date-time, `undefined` for a string that is not one, and
 * `null` for one shaped like a date that names no real day or time ("2023-02-30"). The date is
 * the calendar date as written: a date-time's zone does not move it to another day.
 */
export function parseIsoDate(s: string): string | undefined | null {
  const m = ISO_DATE.exec(s)
  if (!m) return undefined
  const [, y, mo, d, h, mi, sec, zh, zm] = m
  const year = Number(y)
  const month = Number(mo)
  const day = Number(d)
  if (year < 1 || month < 1 || month > 12 || day < 1 || day > daysInMonth(year, month)) return null
  if (h !== undefined && (Number(h) > 23 || Number(mi ?? 0) > 59 || Number(sec ?? 0) > 60)) return null
  if (zh !== undefined && (Number(zh) > 23 || Number(zm ?? 0) > 59)) return null
  return `${y}-${mo}-${d}`
}

function daysInMonth(year: number, month: number): number {
  if (month === 2) return (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0 ? 29 : 28
  return [4, 6, 9, 11].includes(month) ? 30 : 31
}

export function jsonType(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  if (typeof v === 'object') return 'an object'
  if (typeof v === 'boolean') return 'a boolean'
  if (typeof v === 'string') return 'a string'
  if (typeof v === 'number') return 'a number'
  return typeof v
}
