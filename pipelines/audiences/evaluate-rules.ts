import {
  DISABLED_PUSH_STATUS_PREFIXES,
  isNumericText,
  type BehaviorRule,
  type Filter,
  type ProfileCriterion,
  type TargetRules,
} from '../../schemas/audiences.ts'
import type { AudienceContext } from './compile-rules.ts'

/**
 * A plain in-memory evaluator of canonical target rules, written from the semantics in
 * docs/audiences.md ("Target rules") rather than from the SQL: the reference the compiler is
 * checked against (test/integration/audience-compiler-property.test.ts). One install at a time,
 * no cleverness. Times are milliseconds since the epoch.
 */

export interface DeviceRow {
  app_id: string
  install_uuid: string
  customer_id: string
  platform: string
  push_token: string
  push_status: string
  device_timezone: string
}

export interface EventRow {
  app_id: string
  install_uuid: string
  event_name: string
  event_time: number
  attributes: Record<string, string>
  country: string
  language: string
  app_version: string
  os_version: string
  platform: string
  model: string
  device_timezone: string
}

export interface SessionRow {
  app_id: string
  install_uuid: string
  session_uuid: string
  started_at: number
  country: string
  app_ver: string
  os_ver: string
  platform: string
}

export interface ProfileRow {
  profiledb_id: number
  customer_id: string
  /** The stored JSON object text. */
  attributes: string
  attribute_types: Record<string, string>
  deleted: number
}

export interface InvalidTokenRow {
  app_id: string
  push_token: string
}

export interface AudienceData {
  devices: DeviceRow[]
  events: EventRow[]
  sessions: SessionRow[]
  profiles: ProfileRow[]
  invalidPushTokens: InvalidTokenRow[]
}

export interface Member {
  install_uuid: string
  customer_id: string
  platform: string
  push_token: string
  push_status: string
  device_timezone: string
  has_push: number
  last_session_at: number | null
}

export interface Counts {
  user_count: number
  has_push: number
  seen_last_thirty: number
}

const DAY = 86_400_000

/** Byte order of the UTF-8 text: how ClickHouse compares and sorts strings. */
const byteCompare = (a: string, b: string) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8'))

const asciiLower = (s: string) => s.replace(/[A-Z]/g, (c) => c.toLowerCase())

function windowOf(rule: BehaviorRule, days: number, now: number): [number, number] {
  if (rule.neg_time_window) return [now - rule.neg_time_window[0] * DAY, now - rule.neg_time_window[1] * DAY]
  return [now - days * DAY, now]
}

/** The comparison operators, on text that is numeric (all values numeric) or compared by bytes. */
function compares(value: string, operator: string, values: string[]): boolean {
  const numeric = values.every(isNumericText)
  if (numeric && !isNumericText(value)) return false
  const cmp = (bound: string) =>
    numeric ? Math.sign(Number(value) - Number(bound)) : byteCompare(value, bound)
  const first = values[0] ?? ''
  switch (operator) {
    case 'greater_than':
    case 'after':
      return cmp(first) > 0
    case 'less_than':
    case 'before':
      return cmp(first) < 0
    case 'greater_than_or_equal':
      return cmp(first) >= 0
    case 'less_than_or_equal':
      return cmp(first) <= 0
    case 'between':
      return cmp(first) >= 0 && cmp(values[1] ?? '') <= 0
    default:
      throw new Error(`not a comparison: ${operator}`)
  }
}

const EVENT_DIMENSIONS = new Set([
  'country',
  'language',
  'app_version',
  'os_version',
  'platform',
  'model',
  'device_timezone',
])
const SESSION_FIELDS: Record<string, keyof SessionRow> = {
  country: 'country',
  app_version: 'app_ver',
  os_version: 'os_ver',
  platform: 'platform',
}

/** The value a filter reads from a row, or undefined when it is not defined there. */
function readEvent(e: EventRow, name: string): string | undefined {
  if (name.startsWith('attributes.')) {
    const key = name.slice('attributes.'.length)
    return Object.hasOwn(e.attributes, key) ? e.attributes[key] : undefined
  }
  if (EVENT_DIMENSIONS.has(name)) {
    const v = e[name as keyof EventRow] as string
    return v === '' ? undefined : v
  }
  return Object.hasOwn(e.attributes, name) ? e.attributes[name] : undefined
}

function readSession(s: SessionRow, name: string): string | undefined {
  const field = SESSION_FIELDS[name]
  if (!field) throw new Error(`no session field ${name}`)
  const v = s[field] as string
  return v === '' ? undefined : v
}

function filterHolds(value: string | undefined, f: Filter): boolean {
  switch (f.operator) {
    case 'is_defined':
      return value !== undefined
    case 'is_not_defined':
      return value === undefined
    case 'is_one_of':
      return value !== undefined && f.values.includes(value)
    case 'is_not_one_of':
      return !(value !== undefined && f.values.includes(value))
    case 'contains':
      return value !== undefined && f.values.some((n) => value.includes(n))
    case 'does_not_contain':
      return !(value !== undefined && f.values.some((n) => value.includes(n)))
    default:
      return value !== undefined && compares(value, f.operator, f.values)
  }
}

/** and / or over a group; an empty group (no filters) constrains nothing. */
function allOrAny(results: boolean[], operator: 'and' | 'or'): boolean {
  if (results.length === 0) return true
  return operator === 'and' ? results.every(Boolean) : results.some(Boolean)
}

function countHolds(count: number, rule: BehaviorRule): boolean {
  if (rule.count === null) return count >= 1
  switch (rule.count_operator) {
    case 'less_than':
      return count < rule.count
    case 'greater_than':
      return count > rule.count
    case 'exactly':
      return count === rule.count
    case 'at_least':
      return count >= rule.count
    case 'at_most':
      return count <= rule.count
  }
}

/** The attribute's values as text (string, integer, or a set's elements), or undefined when absent. */
function attributeTexts(attrs: Record<string, unknown>, key: string): string[] | undefined {
  if (!Object.hasOwn(attrs, key)) return undefined
  const v = attrs[key]
  if (typeof v === 'string') return [v]
  if (typeof v === 'number' && Number.isInteger(v)) return [String(v)]
  if (Array.isArray(v)) return v.map((e) => (typeof e === 'string' ? e : String(e)))
  return []
}

function criterionHolds(profile: ProfileRow | undefined, c: ProfileCriterion, now: number): boolean {
  const attrs = profile ? (JSON.parse(profile.attributes) as Record<string, unknown>) : {}
  const texts = attributeTexts(attrs, c.key)
  const raw = attrs[c.key]
  const isScalar = typeof raw === 'string' || (typeof raw === 'number' && Number.isInteger(raw))
  const isDate = profile?.attribute_types[c.key] === 'date'
  switch (c.operator) {
    case 'is_defined':
      return texts !== undefined
    case 'is_not_defined':
      return texts === undefined
    case 'is_one_of':
      return (texts ?? []).some((t) => c.values.includes(t))
    case 'is_not_one_of':
      return !(texts ?? []).some((t) => c.values.includes(t))
    case 'contains':
      return (texts ?? []).some((t) => c.values.some((n) => t.includes(n)))
    case 'does_not_contain':
      return !(texts ?? []).some((t) => c.values.some((n) => t.includes(n)))
    case 'within_last_days': {
      if (!isScalar || !isDate) return false
      const today = new Date(now).toISOString().slice(0, 10)
      const start = new Date(Date.parse(`${today}T00:00:00Z`) - Number(c.values[0]) * DAY)
        .toISOString()
        .slice(0, 10)
      const d = String(raw)
      return d >= start && d <= today
    }
    default: {
      if (!isScalar) return false
      if (c.date_type === 'date' && !isDate) return false
      if (c.date_type === 'string' && typeof raw !== 'string') return false
      return compares(String(raw), c.operator, c.values)
    }
  }
}

function pushEnabled(d: DeviceRow, invalid: Set<string>): boolean {
  if (d.push_token === '') return false
  const status = asciiLower(d.push_status)
  if (DISABLED_PUSH_STATUS_PREFIXES.some((p) => status.startsWith(p))) return false
  return !invalid.has(d.push_token)
}

/** The members of the rules among the app's installs, ordered by install_uuid (byte order). */
export function evaluateMembers(rules: TargetRules, data: AudienceData, ctx: AudienceContext): Member[] {
  const { now } = ctx
  const devices = data.devices.filter((d) => d.app_id === ctx.appId)
  const invalid = new Set(
    data.invalidPushTokens.filter((t) => t.app_id === ctx.appId).map((t) => t.push_token),
  )
  const live = (db: number) =>
    new Map(
      data.profiles
        .filter((p) => p.profiledb_id === db && p.deleted === 0 && p.customer_id !== '')
        .map((p) => [p.customer_id, p]),
    )
  const appProfiles = live(ctx.appProfiledbId)
  const orgProfiles = live(ctx.orgProfiledbId)
  const members: Member[] = []

  for (const d of devices) {
    const events = data.events.filter((e) => e.app_id === ctx.appId && e.install_uuid === d.install_uuid)
    const sessions = data.sessions.filter((s) => s.app_id === ctx.appId && s.install_uuid === d.install_uuid)

    const ruleResults = (rules.behavior?.rules ?? []).map((rule) => {
      const [from, to] = windowOf(rule, rules.behavior?.days ?? 0, now)
      const inWindow = (t: number) => t >= from && t <= to
      if (rule.rule_type === 'event' || rule.rule_type === 'not-event') {
        const n = events.filter(
          (e) =>
            e.event_name === rule.event_name &&
            inWindow(e.event_time) &&
            allOrAny(
              rule.conditions.filters.map((f) => filterHolds(readEvent(e, f.dimension_name), f)),
              rule.conditions.operator,
            ),
        ).length
        return rule.rule_type === 'event' ? countHolds(n, rule) : !countHolds(n, rule)
      }
      const matching = sessions.filter((s) =>
        allOrAny(
          rule.conditions.filters.map((f) => filterHolds(readSession(s, f.dimension_name), f)),
          rule.conditions.operator,
        ),
      )
      if (rule.rule_type === 'first-session') {
        if (matching.length === 0) return false
        return inWindow(Math.min(...matching.map((s) => s.started_at)))
      }
      const n = new Set(matching.filter((s) => inWindow(s.started_at)).map((s) => s.session_uuid)).size
      return rule.rule_type === 'session' ? countHolds(n, rule) : !countHolds(n, rule)
    })

    const criterionResults = (rules.profile?.criteria ?? []).map((c) => {
      const profiles = c.scope === 'app' ? appProfiles : orgProfiles
      const profile = d.customer_id === '' ? undefined : profiles.get(d.customer_id)
      return criterionHolds(profile, c, now)
    })

    const parts: boolean[] = []
    if (rules.behavior) parts.push(allOrAny(ruleResults, rules.behavior.behavior_rule_operator))
    if (rules.profile) parts.push(allOrAny(criterionResults, rules.profile.operator))
    if (!allOrAny(parts, rules.behavior_profile_operator)) continue

    const starts = sessions.map((s) => s.started_at)
    members.push({
      install_uuid: d.install_uuid,
      customer_id: d.customer_id,
      platform: d.platform,
      push_token: d.push_token,
      push_status: d.push_status,
      device_timezone: d.device_timezone,
      has_push: pushEnabled(d, invalid) ? 1 : 0,
      last_session_at: starts.length > 0 ? Math.max(...starts) : null,
    })
  }
  return members.sort((a, b) => byteCompare(a.install_uuid, b.install_uuid))
}

export function evaluateCounts(rules: TargetRules, data: AudienceData, ctx: AudienceContext): Counts {
  const members = evaluateMembers(rules, data, ctx)
  const seenFrom = ctx.now - 30 * DAY
  const seen = (m: Member) =>
    data.sessions.some(
      (s) =>
        s.app_id === ctx.appId &&
        s.install_uuid === m.install_uuid &&
        s.started_at >= seenFrom &&
        s.started_at <= ctx.now,
    )
  return {
    user_count: members.length,
    has_push: members.filter((m) => m.has_push === 1).length,
    seen_last_thirty: members.filter(seen).length,
  }
}
