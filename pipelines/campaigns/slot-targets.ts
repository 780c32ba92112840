import type { PushRequestRecord } from '../../schemas/push.ts'
import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import { deviceColumns } from '../push/plan.ts'
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
        // Two reads, each along a primary key: the slot's page of the plan, then those installs'
        // devices (one join evaluating the page twice made a campaign send at half a broadcast's pace).
        const page = await store.query<{ install_uuid: string; customer_id: string }>(
          `SELECT install_uuid, customer_id FROM campaign_sends
           WHERE campaign_id = {campaign:UInt64} AND occurrence = {occurrence:String} AND slot = {slot:UInt32}
             AND variant = {variant:String} AND outcome = 'targeted'
             AND planned_at = fromUnixTimestamp64Milli({plan:Int64}) AND install_uuid > {after:String}
           ORDER BY install_uuid LIMIT {limit:UInt32}`,
          {
            campaign: record.campaignId,
            occurrence: target.occurrence,
            slot: target.slot,
            variant: record.creative,
            plan: target.planId,
            after,
            limit,
          },
        )
        if (page.length === 0) return { devices: deviceColumns([]), last: undefined, full: false }
        const installs = stringSet(
          'installs',
          page.map((p) => p.install_uuid),
        )
        const devices = await store.query<{ install_uuid: string; platform: string; push_token: string }>(
          `SELECT install_uuid, platform, push_token FROM devices FINAL
           WHERE app_id = {app:String} AND install_uuid IN ${installs.sql} AND push_token != ''`,
          { app: record.appId, installs: installs.value },
        )
        const byInstall = new Map(devices.map((d) => [d.install_uuid, d]))
        const rows = page.flatMap((p) => {
          const d = byInstall.get(p.install_uuid)
          return d ? [{ ...p, platform: d.platform, push_token: d.push_token }] : []
        })
        return { devices: deviceColumns(rows), last: page.at(-1)?.install_uuid, full: page.length >= limit }
      }
    },
  }
}
