import type { CustomerResponse, ProfileResponse } from '../../schemas/profiles.ts'
import type { Store } from '../connectors/store/store.ts'
import { assembleProfile, type DeviceFacts, type StoredProfile } from './auto-profile.ts'
import { attributesFromRow } from './stored-profile.ts'

/**
 * Reads of the profile store. Every query is scoped by the caller's org: profile dbs come from
 * the org and its apps (resolved by the edge), device facts from apps of that org only.
 */

export interface OrgScope {
  orgId: number
  /** The org-level profile db. */
  orgDb: number
}

export interface AppRef {
  app_id: string
  profiledb_id: number
}

/** One profile: org level (`app` undefined) or app level. undefined when it does not exist. */
export async function readProfile(
  store: Store,
  org: OrgScope,
  app: AppRef | undefined,
  customer: string,
  now = Date.now(),
): Promise<ProfileResponse | undefined> {
  const [stored, facts] = await Promise.all([
    loadStored(store, [app ? app.profiledb_id : org.orgDb], [customer]),
    loadFacts(store, org.orgId, [customer], app ? [app.app_id] : undefined),
  ])
  return assembleProfile(stored[0], facts, now)
}

/**
 * Customers with every profile they have among the org-level one and the given apps' (those carry
 * `app_id`), in the order given; a customer with no profile at all is left out. The org-level
 * auto-profile reads every app of the org, whichever apps are listed.
 */
export async function readCustomers(
  store: Store,
  org: OrgScope,
  apps: readonly AppRef[],
  customers: readonly string[],
  now = Date.now(),
): Promise<CustomerResponse[]> {
  if (customers.length === 0) return []
  const [stored, facts] = await Promise.all([
    loadStored(store, [org.orgDb, ...apps.map((a) => a.profiledb_id)], customers),
    loadFacts(store, org.orgId, customers, undefined),
  ])
  const storedBy = new Map(stored.map((s) => [`${s.profiledb_id}\n${s.customer_id}`, s]))
  const sortedApps = [...apps].sort((a, b) => (a.app_id < b.app_id ? -1 : a.app_id > b.app_id ? 1 : 0))
  const result: CustomerResponse[] = []
  for (const customer of customers) {
    const own = facts.filter((f) => f.customer_id === customer)
    const profiles: ProfileResponse[] = []
    const orgProfile = assembleProfile(storedBy.get(`${org.orgDb}\n${customer}`), own, now)
    if (orgProfile) profiles.push(orgProfile)
    for (const app of sortedApps) {
      const appFacts = own.filter((f) => f.app_id === app.app_id)
      const profile = assembleProfile(storedBy.get(`${app.profiledb_id}\n${customer}`), appFacts, now)
      if (profile) profiles.push({ ...profile, app_id: app.app_id })
    }
    if (profiles.length > 0) result.push({ id: customer, profiles })
  }
  return result
}

/** Customers of an org-level profile db whose current `$email` is `email`, case-insensitively. */
export async function customersByEmail(store: Store, orgDb: number, email: string): Promise<string[]> {
  const wanted = email.trim().toLowerCase()
  // The unmerged scan finds candidates through the skip index; FINAL then confirms the current version.
  const candidates = await store.query<{ customer_id: string }>(
    'SELECT DISTINCT customer_id FROM profiles WHERE profiledb_id = {db:UInt64} AND email = {email:String}',
    { db: orgDb, email: wanted },
  )
  if (candidates.length === 0) return []
  const current = await store.query<{ customer_id: string }>(
    `SELECT customer_id FROM profiles FINAL
     WHERE profiledb_id = {db:UInt64} AND customer_id IN {customers:Array(String)}
       AND deleted = 0 AND email = {email:String}
     ORDER BY customer_id`,
    { db: orgDb, customers: candidates.map((c) => c.customer_id), email: wanted },
  )
  return current.map((c) => c.customer_id)
}

async function loadStored(
  store: Store,
  dbs: number[],
  customers: readonly string[],
): Promise<StoredProfile[]> {
  const rows = await store.query<{
    profiledb_id: number | string
    app_id: string
    customer_id: string
    attributes: string
    attribute_types: Record<string, string>
    deleted: number | string
    updated_at: number | string
  }>(
    `SELECT profiledb_id, app_id, customer_id, attributes, attribute_types, deleted,
            toUnixTimestamp64Milli(updated_at) AS updated_at
     FROM profiles FINAL
     WHERE profiledb_id IN {dbs:Array(UInt64)} AND customer_id IN {customers:Array(String)}`,
    { dbs: [...new Set(dbs)], customers: [...new Set(customers)] },
  )
  return rows.map((row) => ({
    profiledb_id: Number(row.profiledb_id),
    app_id: row.app_id,
    customer_id: row.customer_id,
    attributes: Number(row.deleted) === 1 ? null : attributesFromRow(row.attributes, row.attribute_types),
    updated_at: Number(row.updated_at),
  }))
}

// Two fixed filters, never text from a request: the org's apps, or the listed apps of the org.
const ORG_APPS = 'app_id IN (SELECT app_id FROM apps FINAL WHERE org_id = {org:UInt64} AND deleted = 0)'
const LISTED_APPS = `app_id IN {apps:Array(String)} AND ${ORG_APPS}`

/** The SDK's last-device state and session counts of these customers in the org's apps (or the listed ones). */
async function loadFacts(
  store: Store,
  orgId: number,
  customers: readonly string[],
  apps: readonly string[] | undefined,
): Promise<DeviceFacts[]> {
  const appFilter = apps ? LISTED_APPS : ORG_APPS
  const params = { org: orgId, customers: [...new Set(customers)], ...(apps ? { apps: [...apps] } : {}) }
  const [devices, sessions] = await Promise.all([
    store.query<Record<keyof Omit<DeviceFacts, 'sessions'>, string | number | null>>(
      `SELECT app_id, customer_id,
              toUnixTimestamp64Milli(last_active_at) AS last_active_at,
              toUnixTimestamp64Milli(first_session_at) AS first_session_at,
              toUnixTimestamp64Milli(last_session_at) AS last_session_at,
              app_version, os_version, country, language, device_timezone, push_token, push_status, user_type
       FROM customer_devices FINAL
       WHERE ${appFilter} AND customer_id IN {customers:Array(String)}`,
      params,
    ),
    store.query<{ app_id: string; customer_id: string; sessions: number | string }>(
      `SELECT app_id, customer_id, uniqExact(session_uuid) AS sessions FROM sessions
       WHERE ${appFilter} AND customer_id IN {customers:Array(String)}
       GROUP BY app_id, customer_id`,
      params,
    ),
  ])
  const counts = new Map(sessions.map((s) => [`${s.app_id}\n${s.customer_id}`, Number(s.sessions)]))
  const optionalMs = (v: string | number | null) => (v === null ? null : Number(v))
  return devices.map((d) => ({
    app_id: String(d.app_id),
    customer_id: String(d.customer_id),
    last_active_at: Number(d.last_active_at),
    first_session_at: optionalMs(d.first_session_at),
    last_session_at: optionalMs(d.last_session_at),
    app_version: String(d.app_version),
    os_version: String(d.os_version),
    country: String(d.country),
    language: String(d.language),
    device_timezone: String(d.device_timezone),
    push_token: String(d.push_token),
    push_status: String(d.push_status),
    user_type: String(d.user_type),
    sessions: counts.get(`${String(d.app_id)}\n${String(d.customer_id)}`) ?? 0,
  }))
}
