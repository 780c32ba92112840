import type { Store } from '../connectors/store/store.ts'
import {
  emptyCampaignState,
  type CampaignNeeds,
  type CampaignRow,
  type CampaignState,
} from './campaign-commands.ts'

/** Columns of a campaign row as read back (times in ms). */
export const CAMPAIGN_COLUMNS = `id, org_id, app_id, channel, name, status, archived, deleted, body, max_creative_id,
  toUnixTimestamp64Milli(activated_at) AS activated_at, toUnixTimestamp64Milli(created_at) AS created_at,
  toUnixTimestamp64Milli(updated_at) AS updated_at, version`

export type RawCampaignRow = {
  [K in keyof CampaignRow]: CampaignRow[K] extends number ? number | string : CampaignRow[K]
} & {
  activated_at: number | string | null
}

export function toCampaignRow(r: RawCampaignRow): CampaignRow {
  return {
    id: Number(r.id),
    org_id: Number(r.org_id),
    app_id: r.app_id,
    channel: r.channel,
    name: r.name,
    status: r.status,
    archived: Number(r.archived) === 1 ? 1 : 0,
    deleted: Number(r.deleted) === 1 ? 1 : 0,
    body: r.body,
    max_creative_id: Number(r.max_creative_id),
    activated_at: r.activated_at === null ? null : Number(r.activated_at),
    created_at: Number(r.created_at),
    updated_at: Number(r.updated_at),
    version: Number(r.version),
  }
}

/** The control applier's read for a batch holding campaign commands: the sequences and the named rows. */
export async function readCampaignState(store: Store, needs: CampaignNeeds): Promise<CampaignState> {
  if (!needs.any) return emptyCampaignState()
  const [max, rows] = await Promise.all([
    store.query<{ campaigns: number | string; creatives: number | string }>(
      'SELECT max(id) AS campaigns, max(max_creative_id) AS creatives FROM campaigns',
    ),
    needs.ids.length === 0
      ? []
      : store.query<RawCampaignRow>(
          `SELECT ${CAMPAIGN_COLUMNS} FROM campaigns FINAL WHERE id IN {ids:Array(UInt64)}`,
          {
            ids: needs.ids,
          },
        ),
  ])
  return {
    maxId: Number(max[0]?.campaigns ?? 0),
    maxCreativeId: Number(max[0]?.creatives ?? 0),
    rows: new Map(rows.map((r) => [Number(r.id), toCampaignRow(r)])),
  }
}
