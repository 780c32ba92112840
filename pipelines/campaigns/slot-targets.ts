import type { PushRequestRecord } from '../../schemas/push.ts'
import type { Store } from '../connectors/store/store.ts'
import { TargetGone, type MemberSource, type TargetPage } from '../push/planner.ts'
import { parseSlotTarget } from './campaign-push.ts'

/**
 * The installs of a `campaign_slot` push request: those the occurrence's standing plan assigned
 * to this slot and creative with outcome `targeted`, in install order (the push planner pages by
 * keyset and resumes after a crash where it stopped), each with its device's push token as it is
 * now. An install whose token has gone since the plan is read but not delivered to.
 */
export function campaignSlotMembers(store: Store): MemberSource {
  return {
    pagesOf(record: PushRequestRecord) {
      const target = parseSlotTarget(record.messages[0]?.target)
      return async (after: string, limit: number): Promise<TargetPage> => {
        if (!target || !record.campaignId || !record.creative)
          throw new TargetGone(`request ${record.requestId} names no campaign slot`)
        const slot = `SELECT install_uuid, customer_id FROM campaign_sends
          WHERE campaign_id = {campaign:UInt64} AND occurrence = {occurrence:String} AND slot = {slot:UInt32}
            AND variant = {variant:String} AND outcome = 'targeted'
            AND planned_at = fromUnixTimestamp64Milli({plan:Int64}) AND install_uuid > {after:String}
          ORDER BY install_uuid LIMIT {limit:UInt32}`
        const rows = await store.query<{
          install_uuid: string
          customer_id: string
          platform: string
          push_token: string
        }>(
          `SELECT s.install_uuid AS install_uuid, s.customer_id AS customer_id, d.platform AS platform,
                  d.push_token AS push_token
           FROM (${slot}) AS s
           LEFT JOIN
           (
             SELECT install_uuid, platform, push_token FROM devices FINAL
             WHERE app_id = {app:String} AND install_uuid IN (SELECT install_uuid FROM (${slot}))
           ) AS d ON d.install_uuid = s.install_uuid
           ORDER BY install_uuid
           SETTINGS join_use_nulls = 0`,
          {
            app: record.appId,
            campaign: record.campaignId,
            occurrence: target.occurrence,
            slot: target.slot,
            variant: record.creative,
            plan: target.planId,
            after,
            limit,
          },
        )
        return {
          devices: rows.filter((r) => r.push_token !== ''),
          last: rows.at(-1)?.install_uuid,
          full: rows.length >= limit,
        }
      }
    },
  }
}
