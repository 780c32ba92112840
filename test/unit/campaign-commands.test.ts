import { describe, expect, it } from 'vitest'
import {
  applyCampaignCommand,
  emptyCampaignState,
  type CampaignCommand,
  type CampaignRow,
} from '../../pipelines/campaigns/campaign-commands.ts'
import { validatePushCampaign } from '../../pipelines/campaigns/validate-campaign.ts'
import { parseTargetRules } from '../../schemas/audiences.ts'
import type { StoredAsset } from '../../schemas/campaigns.ts'

const AT = 1_900_000_000_000
let n = 0
const command = <K extends CampaignCommand['kind']>(
  kind: K,
  payload: Extract<CampaignCommand, { kind: K }>['payload'],
  at = AT,
) => ({ id: `c${++n}`, kind, at, payload }) as Extract<CampaignCommand, { kind: K }>

const body = (creatives: { id?: number; percent: number; msg: string }[]) => {
  const v = validatePushCampaign(
    {
      name: 'x',
      status: 'draft',
      goal: 'notify',
      audiences: { campaign_type: 'everyone' },
      schedule: { begin_immediately: {} },
      creatives: creatives.map((c) => ({
        ...(c.id && { id: c.id }),
        percent: c.percent,
        build_attributes: { push_message: c.msg },
      })),
    },
    parseTargetRules,
  )
  if (!v.ok) throw new Error(JSON.stringify(v.issues))
  return v.body as unknown as Record<string, unknown>
}
const scope = { org_id: 1, app_id: 'app', channel: 'push' as const }

describe('campaign control commands', () => {
  it('allocates campaign and creative ids from their sequences', () => {
    const s = { ...emptyCampaignState(), maxId: 7, maxCreativeId: 40 }
    const rows: CampaignRow[] = []
    const r = applyCampaignCommand(
      s,
      command('create-campaign', {
        ...scope,
        body: body([
          { percent: 50, msg: 'a' },
          { percent: 50, msg: 'b' },
        ]),
      }),
      rows,
    )
    expect(r.status).toBe(201)
    expect(r.body).toMatchObject({
      id: 8,
      creatives: [
        { id: 41, letter: 'A' },
        { id: 42, letter: 'B' },
      ],
    })
    expect(rows).toHaveLength(1)
    expect(rows[0]).toMatchObject({
      id: 8,
      max_creative_id: 42,
      status: 'draft',
      activated_at: null,
      version: AT,
      created_at: AT,
    })
    expect(s.maxId).toBe(8)
  })

  it('keeps creative ids on update: by id, else by position; new ones get fresh ids', () => {
    const s = emptyCampaignState()
    const rows: CampaignRow[] = []
    applyCampaignCommand(
      s,
      command('create-campaign', {
        ...scope,
        body: body([
          { percent: 50, msg: 'a' },
          { percent: 50, msg: 'b' },
        ]),
      }),
      rows,
    )
    // Creative 2 (id 2) moves first by naming its id; position 2's old id is now claimed, so the
    // creative there is new, as is the third.
    const r = applyCampaignCommand(
      s,
      command(
        'update-campaign',
        {
          ...scope,
          campaign_id: 1,
          body: body([
            { id: 2, percent: 40, msg: 'b' },
            { percent: 40, msg: 'a' },
            { percent: 20, msg: 'c' },
          ]),
        },
        AT + 5,
      ),
      rows,
    )
    expect(r.status).toBe(200)
    expect(
      (r.body as { creatives: { id: number; letter: string }[] }).creatives.map((c) => [c.letter, c.id]),
    ).toEqual([
      ['A', 2],
      ['B', 3],
      ['C', 4],
    ])
    expect(rows[1]).toMatchObject({
      id: 1,
      version: AT + 5,
      created_at: AT,
      updated_at: AT + 5,
      max_creative_id: 4,
    })
    // The same creatives sent again without ids keep theirs, by position.
    const again = applyCampaignCommand(
      s,
      command(
        'update-campaign',
        {
          ...scope,
          campaign_id: 1,
          body: body([
            { percent: 40, msg: 'b' },
            { percent: 40, msg: 'a' },
            { percent: 20, msg: 'c' },
          ]),
        },
        AT + 6,
      ),
      rows,
    )
    expect((again.body as { creatives: { id: number }[] }).creatives.map((c) => c.id)).toEqual([2, 3, 4])
  })

  it("records when a campaign goes active, and refuses unknown, deleted and other apps' campaigns", () => {
    const s = emptyCampaignState()
    const rows: CampaignRow[] = []
    applyCampaignCommand(
      s,
      command('create-campaign', { ...scope, body: body([{ percent: 100, msg: 'a' }]) }),
      rows,
    )
    const active = { ...body([{ percent: 100, msg: 'a' }]), status: 'active' }
    applyCampaignCommand(
      s,
      command('update-campaign', { ...scope, campaign_id: 1, body: active }, AT + 10),
      rows,
    )
    expect(rows[1]!.activated_at).toBe(AT + 10)
    applyCampaignCommand(
      s,
      command('update-campaign', { ...scope, campaign_id: 1, body: active }, AT + 20),
      rows,
    )
    expect(rows[2]!.activated_at).toBe(AT + 10)
    expect(
      applyCampaignCommand(
        s,
        command('archive-campaign', { ...scope, app_id: 'other', campaign_id: 1 }),
        rows,
      ).status,
    ).toBe(404)
    expect(
      applyCampaignCommand(
        s,
        command('archive-campaign', { ...scope, channel: 'inapp', campaign_id: 1 }),
        rows,
      ).status,
    ).toBe(404)
    expect(applyCampaignCommand(s, command('delete-campaign', { ...scope, campaign_id: 1 }), rows)).toEqual({
      status: 204,
      body: null,
    })
    expect(applyCampaignCommand(s, command('delete-campaign', { ...scope, campaign_id: 1 }), rows)).toEqual({
      status: 404,
      body: { error: 'campaign 1 not found' },
    })
    expect(
      applyCampaignCommand(s, command('update-campaign', { ...scope, campaign_id: 9, body: active }), rows)
        .status,
    ).toBe(404)
  })

  it('refuses an in-app creative without any file, and keeps earlier files on update', () => {
    const asset = (name: string): StoredAsset => ({
      name,
      path: `inapp/app/x/${name}`,
      kind: 'html',
      bytes: 10,
      sha256: 'x',
    })
    const inapp = (assets: Record<string, unknown>, creatives = 1) => ({
      name: 'i',
      status: 'draft',
      goal: 'notify',
      audiences: { campaign_type: 'everyone', control_group_percent: 0, devices: ['phone'] },
      schedule: { begin_date: '2030-01-01T00:00:00Z' },
      creatives: Array.from({ length: creatives }, (_, i) => ({
        id: 0,
        letter: 'AB'[i],
        percent: 100 / creatives,
        position: 'center',
        key_values: [],
      })),
      assets,
    })
    const s = emptyCampaignState()
    const rows: CampaignRow[] = []
    const ic = { ...scope, channel: 'inapp' as const }
    const missing = applyCampaignCommand(s, command('create-campaign', { ...ic, body: inapp({}) }), rows)
    expect(missing.status).toBe(422)
    expect(s.maxCreativeId).toBe(0)
    const ok = applyCampaignCommand(
      s,
      command('create-campaign', { ...ic, body: inapp({ A: { phone: asset('a.html') } }) }),
      rows,
    )
    expect(ok).toMatchObject({ status: 201, body: { id: 1, creatives: [{ id: 1, file_phone: 'a.html' }] } })
    const upd = applyCampaignCommand(
      s,
      command('update-campaign', {
        ...ic,
        campaign_id: 1,
        body: inapp({ B: { tablet: asset('b.html') } }, 2),
      }),
      rows,
    )
    expect(upd).toMatchObject({
      status: 200,
      body: {
        creatives: [
          { id: 1, file_phone: 'a.html' },
          { id: 2, file_tablet: 'b.html' },
        ],
      },
    })
    expect((JSON.parse(rows.at(-1)!.body) as { assets: unknown }).assets).toEqual({
      A: { phone: asset('a.html') },
      B: { tablet: asset('b.html') },
    })
  })
})
