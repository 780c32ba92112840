import type { ProfileResponse } from '../../schemas/profiles.ts'
import { toWire, type Attributes } from './apply-changes.ts'

/**
 * The auto-profile (`vendor.attributes`, pure): what the SDK pipeline knows about a customer in
 * an app (`customer_devices`: the last active device and its dimensions; `sessions`: counts),
 * turned into the spec's auto-profile names. An app-level profile reads its app's facts; the
 * org-level profile reads the facts of every app of the org.
 */
export interface DeviceFacts {
  app_id: string
  customer_id: string
  last_active_at: number
  first_session_at: number | null
  last_session_at: number | null
  app_version: string
  os_version: string
  country: string
  language: string
  device_timezone: string
  push_token: string
  push_status: string
  user_type: string
  sessions: number
}

export type VendorAttributes = Record<string, string | number | boolean>

/**
 * Attributes Sluice has no data for (city_name, last_push_opened, last_email_delivered, …) are
 * left out rather than sent empty. Dimensions come from the most recently active device across
 * the facts given; session counts add up; first and last session dates are the min and max.
 */
export function vendorAttributes(facts: readonly DeviceFacts[], now: number): VendorAttributes {
  if (facts.length === 0) return {}
  const latest = facts.reduce((a, b) => (b.last_active_at > a.last_active_at ? b : a))
  const out: VendorAttributes = {}
  const text = (name: string, value: string) => {
    if (value !== '') out[name] = value
  }
  text('app_version', latest.app_version)
  text('os_version', latest.os_version)
  out.total_sessions = facts.reduce((sum, f) => sum + f.sessions, 0)
  const firsts = facts.map((f) => f.first_session_at).filter((t): t is number => t !== null)
  const lasts = facts.map((f) => f.last_session_at).filter((t): t is number => t !== null)
  if (firsts.length > 0) out.birthdate = isoDate(firsts.reduce((a, b) => Math.min(a, b)))
  if (lasts.length > 0) {
    const last = lasts.reduce((a, b) => Math.max(a, b))
    out.last_session_date = isoDate(last)
    out.seconds_since_last_session = Math.max(0, Math.floor((now - last) / 1000))
  }
  out.push_enabled = pushEnabled(latest.push_status, latest.push_token)
  text('user_type', latest.user_type)
  text('country', latest.country)
  text('device_timezone', latest.device_timezone)
  text('language', latest.language)
  return out
}

/** Push status as the SDK logs it: Provisional, Disabled, Enable (Delivered Quietly), Enabled (Prominent). */
export function pushEnabled(status: string, token: string): boolean {
  if (status !== '') return !/^disabled/i.test(status.trim())
  return token !== ''
}

const isoDate = (ms: number) => new Date(ms).toISOString().slice(0, 10)

export interface StoredProfile {
  profiledb_id: number
  app_id: string
  customer_id: string
  /** null for a deleted profile. */
  attributes: Attributes | null
  updated_at: number
}

/**
 * Whether a profile exists, and what a read returns. A stored profile exists until deleted; a
 * customer the SDK has seen has an auto-profile even before anything is stored, and a deleted
 * profile comes back (empty) only when the SDK sees the customer again after the deletion.
 */
export function assembleProfile(
  stored: StoredProfile | undefined,
  facts: readonly DeviceFacts[],
  now: number,
): ProfileResponse | undefined {
  const lastSeen = facts.reduce((max, f) => Math.max(max, f.last_active_at), -Infinity)
  if (stored?.attributes) {
    return { attributes: toWire(stored.attributes), vendor: { attributes: vendorAttributes(facts, now) } }
  }
  if (facts.length === 0) return undefined
  if (stored && lastSeen <= stored.updated_at) return undefined
  return { attributes: {}, vendor: { attributes: vendorAttributes(facts, now) } }
}
