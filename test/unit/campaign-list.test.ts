import { describe, expect, it } from 'vitest'
import type { CampaignRow } from '../../pipelines/campaigns/campaign-commands.ts'
import {
  campaignStatus,
  ONE_TIME_GRACE_MS,
  openRate,
  scheduleFacts,
} from '../../pipelines/campaigns/campaign-list.ts'
import type { PushCampaignBody } from '../../schemas/campaigns.ts'
import type { OccurrenceSummary } from '../../pipelines/campaigns/campaign-reader.ts'

const T = Date.parse('2030-06-01T12:00:00Z')
const row = (schedule: unknown, over: Partial<CampaignRow> = {}): CampaignRow => ({
  id: 1,
  org_id: 1,
  app_id: 'a',
  channel: 'push',
  name: 'n',
  status: 'active',
  archived: 0,
  deleted: 0,
  body: JSON.stringify({ schedule, creatives: [] }),
  max_creative_id: 0,
  activated_at: T - 1000,
  created_at: T - 5000,
  updated_at: T - 1000,
  version: 1,
  ...over,
})
const occ = (latestKey: string, latestState: string): OccurrenceSummary => ({
  latestKey,
  latestState,
  started: 1,
  done: latestState === 'done' ? 1 : 0,
  failed: latestState === 'failed' ? 1 : 0,
})
const status = (r: CampaignRow, o: OccurrenceSummary | undefined, now: number) =>
  campaignStatus(r, scheduleFacts(r, JSON.parse(r.body) as PushCampaignBody), o, now)

describe('campaign list status', () => {
  it('maps drafts: never active → draft, active once → inactive', () => {
    const s = { begin_immediately: {} }
    expect(status(row(s, { status: 'draft', activated_at: null }), undefined, T)).toBe('draft')
    expect(status(row(s, { status: 'draft' }), occ(`i${T - 1000}`, 'done'), T)).toBe('inactive')
  })

  it('moves a one-time schedule from scheduled to active to sent, or expired when never started', () => {
    const r = row({ on_schedule: { begin_date: '2030-06-01T13:00:00Z' } })
    expect(status(r, undefined, T)).toBe('scheduled')
    // Its only slot handed over seconds ahead of the start (the occurrence done): still scheduled.
    expect(status(r, occ('once', 'done'), Date.parse('2030-06-01T12:59:58Z'))).toBe('scheduled')
    expect(status(r, occ('once', 'planned'), T + 3_600_000)).toBe('active')
    expect(status(r, occ('once', 'done'), T + 3_600_000)).toBe('sent')
    expect(status(r, undefined, T + 3_600_000 + ONE_TIME_GRACE_MS)).toBe('expired')
    expect(status(r, occ('once', 'failed'), T + 3_600_000)).toBe('error')
  })

  it('sends begin_immediately once per activation', () => {
    const r = row({ begin_immediately: {} })
    expect(status(r, undefined, T)).toBe('active')
    expect(status(r, occ(`i${T - 1000}`, 'done'), T)).toBe('sent')
    expect(status(r, occ(`i${T - 99_000}`, 'done'), T)).toBe('active')
  })

  it('keeps a recurring campaign active between its dates, expired after', () => {
    const r = row({
      recurring: {
        begin_date: '2030-06-02T09:00:00Z',
        end_date: '2030-06-30T09:00:00Z',
        intervals: [{ interval: 'daily' }],
      },
    })
    expect(status(r, undefined, T)).toBe('scheduled')
    expect(status(r, occ('2030-06-02', 'done'), Date.parse('2030-06-10T00:00:00Z'))).toBe('active')
    expect(status(r, occ('2030-06-30', 'done'), Date.parse('2030-07-01T00:00:00Z'))).toBe('expired')
    expect(status(r, occ('2030-06-30', 'planned'), Date.parse('2030-07-01T00:00:00Z'))).toBe('active')
  })

  it('answers in-app dates, and open rates as percentages', () => {
    const r = row(
      { begin_date: '2030-06-02T00:00:00Z', end_date: '2030-06-03T00:00:00Z' },
      { channel: 'inapp' },
    )
    expect(status(r, undefined, T)).toBe('scheduled')
    expect(status(r, undefined, Date.parse('2030-06-02T10:00:00Z'))).toBe('active')
    expect(status(r, undefined, Date.parse('2030-06-04T00:00:00Z'))).toBe('expired')
    expect(openRate({ sent: 8, opened: 1 })).toBe('12.50%')
    expect(openRate({ sent: 0, opened: 0 })).toBe('0.00%')
  })
})
