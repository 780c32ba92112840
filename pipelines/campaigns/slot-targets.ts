import type { PushRequestRecord } from '../../schemas/push.ts'
import type { Store } from '../connectors/store/store.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import type { DeviceColumns } from '../push/delivery-batch.ts'
import { TargetGone, type MemberSource, type TargetPage } from '../push/planner.ts'
import { readDeviceColumns } from '../push/targets.ts'
import { parseSlotTarget } from './campaign-push.ts'

/**
 * The installs of a `campaign_slot` push request: those the occurrence's standing plan assigned
 * to this slot and creative with outcome `targeted`, in install order (the push planner pages by
 * keyset and resumes after a crash where it stopped), read from the plan alone as columns, the
 * same columnar pages a broadcast reads from `devices`: the plan holds each member's push token
 * and platform as the plan read them (plan-sql.ts). A token a transport has reported dead since
 * is left out, like a broadcast leaves it out.
 */
export function campaignSlotMembers(store: Store): MemberSource {
  return {
    pagesOf(record: PushRequestRecord) {
      const target = parseSlotTarget(record.messages[0]?.target)
      return async (after: string, limit: number): Promise<TargetPage> => {
        if (!target || !record.campaignId || !record.creative)
          throw new TargetGone(`request ${record.requestId} names no campaign slot`)
        const devices = await readDeviceColumns(store, SLOT_PAGE, {
          app: record.appId,
          campaign: record.campaignId,
          occurrence: target.occurrence,
          slot: target.slot,
          variant: record.creative,
          plan: target.planId,
          after,
          limit,
        })
        const last = devices.installs.at(-1)
        return {
          devices: await withTokens(store, record.appId, devices),
          last,
          full: devices.installs.length >= limit,
        }
      }
    },
  }
}

// Along the table's key (campaign, occurrence, install): a range from the cursor on.
const SLOT_PAGE = `SELECT install_uuid, customer_id, platform, push_token FROM campaign_sends
  WHERE campaign_id = {campaign:UInt64} AND occurrence = {occurrence:String} AND install_uuid > {after:String}
    AND planned_at = fromUnixTimestamp64Milli({plan:Int64}) AND slot = {slot:UInt32}
    AND variant = {variant:String} AND outcome = 'targeted'
    AND push_token NOT IN (SELECT push_token FROM invalid_push_tokens WHERE app_id = {app:String})
  ORDER BY install_uuid LIMIT {limit:UInt32}`

/**
 * Plans written before the plan kept tokens (migration 021) hold none: those members get their
 * device's token as it is now; one without a token any more is left out.
 */
async function withTokens(store: Store, appId: string, page: DeviceColumns): Promise<DeviceColumns> {
  const missing = page.installs.filter((_, i) => page.tokens[i] === '')
  if (missing.length === 0) return page
  const set = stringSet('installs', missing)
  const rows = await store.query<{ install_uuid: string; platform: string; push_token: string }>(
    `SELECT install_uuid, toString(platform) AS platform, push_token FROM devices FINAL
     WHERE app_id = {app:String} AND install_uuid IN ${set.sql} AND push_token != ''`,
    { app: appId, installs: set.value },
  )
  const byInstall = new Map(rows.map((d) => [d.install_uuid, d]))
  const out: DeviceColumns = { installs: [], customers: [], platforms: [], tokens: [] }
  page.installs.forEach((install, i) => {
    const device = page.tokens[i] === '' ? byInstall.get(install) : undefined
    const token = device ? device.push_token : page.tokens[i]!
    if (token === '') return
    out.installs.push(install)
    out.customers.push(page.customers[i]!)
    out.platforms.push(device ? device.platform : page.platforms[i]!)
    out.tokens.push(token)
  })
  return out
}
