import type { Store } from '../connectors/store/store.ts'
import { compileMembersOfAny, type AudienceContext, type CompiledQuery } from '../audiences/compile-rules.ts'
import { readLiveAudience } from '../audiences/audience-reader.ts'
import type { TargetRules } from '../../schemas/audiences.ts'
import type { StoredAudiences } from '../../schemas/campaigns.ts'

/**
 * A campaign's audience as target rules, read when it is evaluated (each push occurrence, each
 * in-app request): `everyone` is every install of the app (rules with no part), a saved audience
 * is its rules as they are now, inline rules are the campaign's own. Members come from the
 * audience compiler (pipelines/audiences/compile-rules.ts).
 */

export const EVERYONE: TargetRules = {
  behavior_profile_operator: 'and',
  targeting_type: 'install_id',
  behavior: null,
  profile: null,
}

export class AudienceGoneError extends Error {
  constructor(id: number) {
    super(`audience ${id} no longer exists`)
    this.name = 'AudienceGoneError'
  }
}

/**
 * The rule sets whose members (their union) make the campaign's audience: one for everyone and
 * inline rules, one per saved audience named (each as it is now). A saved audience gone: throws.
 */
export async function campaignRules(
  store: Store,
  scope: { orgId: number; appId: string },
  audiences: StoredAudiences,
): Promise<TargetRules[]> {
  if (audiences.target_rules) return [audiences.target_rules as TargetRules]
  const ids = audiences.audience_id !== undefined ? [audiences.audience_id] : (audiences.audience_ids ?? [])
  if (ids.length === 0) return [EVERYONE]
  const out: TargetRules[] = []
  for (const id of new Set(ids)) {
    const saved = await readLiveAudience(store, scope.orgId, scope.appId, id)
    if (!saved) throw new AudienceGoneError(id)
    out.push(JSON.parse(saved.target_rules) as TargetRules)
  }
  return out
}

/** The profile dbs an audience of this app reads (the app's and its org's); undefined: the app is gone. */
export async function audienceContext(
  store: Store,
  appId: string,
  now: number,
): Promise<AudienceContext | undefined> {
  const rows = await store.query<{ app_db: string | number; org_db: string | number }>(
    `SELECT a.profiledb_id AS app_db, o.profiledb_id AS org_db
     FROM (SELECT org_id, profiledb_id FROM apps FINAL WHERE app_id = {app:String} AND deleted = 0) AS a
     INNER JOIN (SELECT id, profiledb_id FROM orgs FINAL) AS o ON o.id = a.org_id`,
    { app: appId },
  )
  const row = rows[0]
  if (!row) return undefined
  return { appId, appProfiledbId: Number(row.app_db), orgProfiledbId: Number(row.org_db), now }
}

/**
 * Whether one install is a member: the members query narrowed to it. The compiler's query ends
 * in its SETTINGS clause, which must stay the outermost query's.
 */
export function memberCheck(
  rules: readonly TargetRules[],
  ctx: AudienceContext,
  installUuid: string,
): CompiledQuery {
  const members = compileMembersOfAny(rules, ctx)
  const at = members.sql.lastIndexOf(' SETTINGS ')
  const inner = at >= 0 ? members.sql.slice(0, at) : members.sql
  const settings = at >= 0 ? members.sql.slice(at) : ''
  return {
    sql: `SELECT count() AS n FROM (${inner}) WHERE install_uuid = {campaign_install:String}${settings}`,
    params: { ...members.params, campaign_install: installUuid },
  }
}

export async function isMember(
  store: Store,
  rules: readonly TargetRules[],
  ctx: AudienceContext,
  installUuid: string,
): Promise<boolean> {
  const q = memberCheck(rules, ctx, installUuid)
  const rows = await store.query<{ n: string | number }>(q.sql, q.params)
  return Number(rows[0]?.n ?? 0) > 0
}
