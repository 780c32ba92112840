import { z } from 'zod'
import type {
  Channel,
  InappCampaignBody,
  PushCampaignBody,
  StoredAsset,
  StoredInappCreative,
} from '../../schemas/campaigns.ts'
import type { ControlResult } from '../control/control-area.ts'
import { renderCampaign } from './render-campaign.ts'

/**
 * Campaign writes as control commands (docs/control-plane.md, "Adding a kind of record"): the edge
 * validates a campaign and sends it; the control applier allocates the campaign's id and its
 * creatives' ids (one sequence each, shared by push and in-app), checks the campaign exists in
 * that org and app for updates, and writes the row. Pure: no I/O, times from the command.
 */

const orgId = z.number().int().positive()
const appId = z.string().min(1).max(128)
const channel = z.enum(['push', 'inapp'])
const campaignId = z.number().int().positive()
/** Validated by the edge (validate-campaign.ts) before it was sent: carried as is. */
const body = z.record(z.string(), z.unknown())

export const campaignPayloads = {
  'create-campaign': z.object({ org_id: orgId, app_id: appId, channel, body }),
  'update-campaign': z.object({ org_id: orgId, app_id: appId, channel, campaign_id: campaignId, body }),
  'archive-campaign': z.object({ org_id: orgId, app_id: appId, channel, campaign_id: campaignId }),
  'delete-campaign': z.object({ org_id: orgId, app_id: appId, channel, campaign_id: campaignId }),
} as const

export type CampaignCommandKind = keyof typeof campaignPayloads
export const CAMPAIGN_COMMAND_KINDS = Object.keys(campaignPayloads) as CampaignCommandKind[]

export type CampaignCommand = {
  [K in CampaignCommandKind]: {
    id: string
    kind: K
    at: number
    payload: z.infer<(typeof campaignPayloads)[K]>
  }
}[CampaignCommandKind]

export const isCampaignCommand = (c: { kind: string }): c is CampaignCommand =>
  (CAMPAIGN_COMMAND_KINDS as string[]).includes(c.kind)

/** A row of `campaigns` (migration 016); times in ms since the epoch. */
export interface CampaignRow {
  id: number
  org_id: number
  app_id: string
  channel: Channel
  name: string
  status: 'active' | 'draft'
  archived: 0 | 1
  deleted: 0 | 1
  /** The canonical campaign (PushCampaignBody or InappCampaignBody) as JSON. */
  body: string
  max_creative_id: number
  activated_at: number | null
  created_at: number
  updated_at: number
  version: number
}

/** What the applier knows of campaigns before a batch. */
export interface CampaignState {
  maxId: number
  maxCreativeId: number
  /** The campaigns the batch's commands name, as stored (deleted ones included). */
  rows: Map<number, CampaignRow>
}

export const emptyCampaignState = (): CampaignState => ({ maxId: 0, maxCreativeId: 0, rows: new Map() })
export const copyCampaignState = (s: CampaignState): CampaignState => ({ ...s, rows: new Map(s.rows) })

/** What to read for a batch: nothing unless it holds campaign commands. */
export interface CampaignNeeds {
  any: boolean
  ids: number[]
}

export function campaignNeeds(commands: readonly { kind: string; payload: unknown }[]): CampaignNeeds {
  const ids = new Set<number>()
  let any = false
  for (const c of commands) {
    if (!isCampaignCommand(c)) continue
    any = true
    const id = (c.payload as { campaign_id?: number }).campaign_id
    if (id !== undefined) ids.add(id)
  }
  return { any, ids: [...ids] }
}

const refused = (status: number, error: string, errors?: string[]): ControlResult => ({
  status,
  body: errors ? { error, errors } : { error },
})
const nextVersion = (at: number, previous: number | undefined) => Math.max(at, (previous ?? 0) + 1)

type Body = PushCampaignBody | InappCampaignBody

/**
 * Apply one campaign command to the state, appending the rows it writes. An update keeps the ids
 * of the creatives it keeps: a creative that names an id of this campaign keeps it, one without
 * takes the id of the creative at its position before (so re-sending a campaign as it was created
 * changes no id), and the rest get new ids.
 */
export function applyCampaignCommand(
  s: CampaignState,
  command: CampaignCommand,
  rows: CampaignRow[],
): ControlResult {
  const { at } = command
  const p = command.payload
  const write = (row: CampaignRow) => {
    rows.push(row)
    s.rows.set(row.id, row)
  }
  if (command.kind === 'create-campaign') {
    const body = structuredClone(command.payload.body) as unknown as Body
    for (const c of body.creatives) c.id = ++s.maxCreativeId
    const missing = p.channel === 'inapp' ? attachAssets(body as InappCampaignBody, undefined) : []
    if (missing.length > 0) {
      // Given back: nothing of this command is stored.
      s.maxCreativeId -= body.creatives.length
      return refused(422, missing[0]!, missing)
    }
    const id = ++s.maxId
    const row: CampaignRow = {
      id,
      org_id: p.org_id,
      app_id: p.app_id,
      channel: p.channel,
      name: body.name,
      status: body.status,
      archived: 0,
      deleted: 0,
      body: JSON.stringify(body),
      max_creative_id: Math.max(0, ...body.creatives.map((c) => c.id)),
      activated_at: body.status === 'active' ? at : null,
      created_at: at,
      updated_at: at,
      version: at,
    }
    write(row)
    return { status: 201, body: renderCampaign(row) }
  }
  if (!('campaign_id' in p)) throw new Error(`${command.kind} without campaign_id`)
  const previous = s.rows.get(p.campaign_id)
  if (
    !previous ||
    previous.deleted === 1 ||
    previous.org_id !== p.org_id ||
    previous.app_id !== p.app_id ||
    previous.channel !== p.channel
  )
    return refused(404, `campaign ${p.campaign_id} not found`)
  const version = nextVersion(at, previous.version)
  switch (command.kind) {
    case 'update-campaign': {
      const before = JSON.parse(previous.body) as Body
      const body = structuredClone(command.payload.body) as unknown as Body
      const allocated = keepCreativeIds(before, body, () => ++s.maxCreativeId)
      const missing =
        p.channel === 'inapp' ? attachAssets(body as InappCampaignBody, before as InappCampaignBody) : []
      if (missing.length > 0) {
        s.maxCreativeId -= allocated
        return refused(422, missing[0]!, missing)
      }
      const activated = body.status === 'active' && previous.status !== 'active' ? at : previous.activated_at
      const row: CampaignRow = {
        ...previous,
        name: body.name,
        status: body.status,
        body: JSON.stringify(body),
        max_creative_id: Math.max(previous.max_creative_id, ...body.creatives.map((c) => c.id)),
        activated_at: activated,
        updated_at: at,
        version,
      }
      write(row)
      return { status: 200, body: renderCampaign(row) }
    }
    case 'archive-campaign': {
      const row: CampaignRow = { ...previous, archived: 1, updated_at: at, version }
      write(row)
      return { status: 200, body: renderCampaign(row) }
    }
    case 'delete-campaign': {
      write({ ...previous, deleted: 1, updated_at: at, version })
      return { status: 204, body: null }
    }
  }
}

/** Assign ids to an update's creatives (see applyCampaignCommand); returns how many were new. */
function keepCreativeIds(before: Body, after: Body, allocate: () => number): number {
  const previousIds = new Set(before.creatives.map((c) => c.id))
  const claimed = new Set(after.creatives.filter((c) => c.id > 0 && previousIds.has(c.id)).map((c) => c.id))
  const used = new Set<number>()
  let fresh = 0
  after.creatives.forEach((c, i) => {
    if (c.id > 0 && previousIds.has(c.id) && !used.has(c.id)) {
      used.add(c.id)
      return
    }
    const atPosition = before.creatives[i]?.id
    if (atPosition !== undefined && !claimed.has(atPosition) && !used.has(atPosition)) {
      c.id = atPosition
      used.add(atPosition)
      return
    }
    c.id = allocate()
    used.add(c.id)
    fresh++
  })
  return fresh
}

/**
 * An in-app campaign's files, per creative: the ones uploaded with this request (in `assets`,
 * keyed by the creative's letter), else the ones its creative had before (same id). Every creative
 * needs a file for phone or tablet. Returns the broken rules (empty: all well).
 */
function attachAssets(body: InappCampaignBody, before: InappCampaignBody | undefined): string[] {
  const previous = new Map<number, { phone?: StoredAsset; tablet?: StoredAsset }>()
  if (before)
    for (const c of before.creatives) {
      const a = before.assets[c.letter]
      if (a) previous.set(c.id, a)
    }
  const uploaded = body.assets
  const assets: InappCampaignBody['assets'] = {}
  const missing: string[] = []
  body.creatives.forEach((c: StoredInappCreative, i) => {
    const old = previous.get(c.id) ?? {}
    const fresh = uploaded[c.letter] ?? {}
    const phone = fresh.phone ?? old.phone
    const tablet = fresh.tablet ?? old.tablet
    if (!phone && !tablet) {
      missing.push(
        `file_phone_${i + 1}: creative ${i + 1} needs a phone or tablet file (file_phone_${i + 1} or file_tablet_${i + 1})`,
      )
      return
    }
    assets[c.letter] = { ...(phone && { phone }), ...(tablet && { tablet }) }
    delete c.file_phone
    delete c.file_tablet
    if (phone) c.file_phone = phone.name
    if (tablet) c.file_tablet = tablet.name
  })
  body.assets = assets
  return missing
}
