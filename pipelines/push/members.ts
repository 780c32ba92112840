import {
  parseTargetRules,
  profileOnlyRules,
  type ProfileRules,
  type TargetRules,
} from '../../schemas/audiences.ts'
import type { PushRequestRecord } from '../../schemas/push.ts'
import { compileMembers, type AudienceContext } from '../audiences/compile-rules.ts'
import { readLiveAudience } from '../audiences/audience-reader.ts'
import type { Store } from '../connectors/store/store.ts'
import { deviceColumns } from './plan.ts'
import { TargetGone, type MemberSource, type TargetPage } from './planner.ts'

/** The profile databases of an app and of its org (the control plane's records). */
export interface ProfileDbs {
  profileDbsOf(orgId: number, appId: string): Promise<{ app: number; org: number } | undefined>
}

/**
 * The members of an audience_id or profile request, through the audience compiler: the
 * audience's members (or the installs whose profile matches the criteria) at the time the request
 * was accepted, one keyset page at a time in install order; only those with an enabled push token
 * are delivered to. The audience's rules are read once per request, so an edit of the audience
 * during a fan-out does not change whom the rest of it reaches.
 */
export function audienceMembers(store: Store, dbs: ProfileDbs): MemberSource {
  return {
    pagesOf(record: PushRequestRecord) {
      let resolved: Promise<{ rules: TargetRules; ctx: AudienceContext }> | undefined
      const resolve = async () => {
        const found = await dbs.profileDbsOf(record.orgId, record.appId)
        if (!found) throw new TargetGone(`app ${record.appId} no longer exists`)
        const ctx: AudienceContext = {
          appId: record.appId,
          appProfiledbId: found.app,
          orgProfiledbId: found.org,
          now: record.receivedAt,
        }
        return { rules: await rulesOf(store, record), ctx }
      }
      return async (after: string, limit: number): Promise<TargetPage> => {
        resolved ??= resolve()
        const { rules, ctx } = await resolved
        const query = compileMembers(rules, ctx, { ...(after !== '' && { afterInstall: after }), limit })
        const rows = await store.query<{
          install_uuid: string
          customer_id: string
          platform: string
          push_token: string
          has_push: number | string
        }>(query.sql, query.params)
        return {
          devices: deviceColumns(rows.filter((r) => Number(r.has_push) === 1)),
          last: rows.at(-1)?.install_uuid,
          full: rows.length >= limit,
        }
      }
    },
  }
}

async function rulesOf(store: Store, record: PushRequestRecord): Promise<TargetRules> {
  const target = record.messages[0]?.target
  if (record.targetType === 'profile') return profileOnlyRules(target as ProfileRules)
  const id = Number(target)
  const audience = await readLiveAudience(store, record.orgId, record.appId, id)
  if (!audience) throw new TargetGone(`audience ${id} no longer exists`)
  const parsed = parseTargetRules(JSON.parse(audience.target_rules))
  if (!parsed.ok)
    throw new TargetGone(`audience ${id}'s rules do not parse: ${parsed.issues[0]?.message ?? ''}`)
  return parsed.rules
}

/** The edge's 403 check: undefined when the audience is a live audience of this org's app. */
export async function audienceRefusal(
  store: Store,
  orgId: number,
  appId: string,
  id: number,
): Promise<string | undefined> {
  const audience = await readLiveAudience(store, orgId, appId, id)
  return audience ? undefined : `audience ${id} is unknown, deleted or not an audience of app ${appId}`
}
