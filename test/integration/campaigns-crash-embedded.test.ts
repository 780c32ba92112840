import { join } from 'node:path'
import { createClient, type ClickHouseClient } from '@clickhouse/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { variantOf } from '../../pipelines/campaigns/assign-variant.ts'
import { PLAN_AHEAD_MS } from '../../pipelines/campaigns/occurrences.ts'
import { postSdkTo, sessionRow } from '../helpers/ingestion-scenario.ts'
import { pushFileLines } from '../helpers/push-file-lines.ts'
import { createTenant, startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'
import { waitFor } from '../helpers/wait-for.ts'

const TOKEN = 'campaign-crash-admin-token-123'
const APP = 'crash-campaigns'
const INSTALLS = 600
const CAMPAIGNS = 12
const BATCH = 100
const CONTROL = 10
const CREATIVES = [
  { letter: 'A', percent: 50 },
  { letter: 'B', percent: 50 },
]

/**
 * kill -9 of the embedded process twice while campaigns run: first while the executor plans
 * (some occurrences planned, others not: their plans are one INSERT … SELECT each, made in one
 * pass), then while the push pipeline sends them. After each restart the executor plans what was
 * left `planning` again under a new plan id and dispatches the planned slots; the push planner
 * resumes. Every member of every campaign ends with exactly one push recorded, or none when it is
 * in the control group; on the wire, only a batch in flight at the kill is written again, under
 * the same delivery id.
 */
describe('kill -9 of the embedded process while campaigns are planned and sent', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  let sluice: SluiceChild | undefined
  let client: ClickHouseClient | undefined
  beforeAll(async () => {
    dir = await tempDir('campaign-crash')
  })
  afterAll(async () => {
    await client?.close()
    await sluice?.stop()
    await dir.cleanup()
  })

  const sql = async <T>(query: string): Promise<T[]> =>
    await (await client!.query({ query, format: 'JSONEachRow' })).json<T>()
  const connect = () => {
    client = createClient({ url: sluice!.sqlUrl!, username: 'admin', password: TOKEN })
  }
  const crash = async () => {
    await client!.close()
    client = undefined
    await sluice!.kill9()
  }

  it('sends every member exactly one push or holds it out, none twice', { timeout: 420_000 }, async () => {
    const env = {
      SLUICE_DATA_DIR: dir.path,
      SLUICE_ADMIN_TOKEN: TOKEN,
      SLUICE_CAMPAIGN_TICK_MS: '300',
      // Slow enough that the second kill lands mid-send, with many batches still to go.
      SLUICE_PUSH_SEND_RATE_PER_APP: '400',
      SLUICE_PUSH_BATCH_SIZE: String(BATCH),
    }
    sluice = await startSluice(env)
    const { auth, orgId } = await createTenant(sluice.url, TOKEN, APP)
    const installs = Array.from({ length: INSTALLS }, (_, i) => `ci-${String(i).padStart(4, '0')}`)
    const at = Date.now() - 60_000
    for (let i = 0; i < installs.length; i += 300)
      await postSdkTo(
        sluice.url,
        APP,
        installs.slice(i, i + 300).map((install, j) => ({
          ...sessionRow({ install, customer: `c${i + j}`, at, country: 'fr', model: 'm' }),
          platform: (i + j) % 2 === 0 ? 'iOS' : 'Android',
        })),
      )
    connect()
    await waitFor(
      () => sql<{ n: string }>(`SELECT count() AS n FROM devices FINAL WHERE app_id = '${APP}'`),
      (rows) => Number(rows[0]?.n) === INSTALLS,
      { what: 'the devices', timeoutMs: 60_000 },
    )

    // All scheduled for one moment far enough ahead that creating them all takes less time than
    // the wait until their plan-ahead window opens: the executor then plans all of them in one pass.
    const begin = Date.now() + PLAN_AHEAD_MS + 25_000
    const ids: number[] = []
    for (let c = 0; c < CAMPAIGNS; c++) {
      const res = await fetch(`${sluice.url}/api/v6/orgs/${orgId}/apps/${APP}/push/campaigns`, {
        method: 'POST',
        headers: { Authorization: auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          name: `Crash ${c}`,
          status: 'active',
          goal: 'notify',
          audiences: { campaign_type: 'everyone', control_group_percent: CONTROL },
          schedule: { on_schedule: { begin_date: new Date(begin).toISOString() } },
          creatives: CREATIVES.map((v) => ({
            percent: v.percent,
            build_attributes: { push_message: `Campaign ${c} ${v.letter}` },
          })),
        }),
      })
      expect(res.status).toBe(201)
      ids.push(((await res.json()) as { id: number }).id)
    }
    expect(Date.now()).toBeLessThan(begin - PLAN_AHEAD_MS)

    // Kill 1: as soon as the pass has begun planning, before it planned them all.
    const states = () =>
      sql<{ campaign_id: string; state: string; plan_id: string }>(
        `SELECT campaign_id, argMax(state, version) AS state, toString(argMax(plan_id, version)) AS plan_id
           FROM campaign_occurrences WHERE app_id = '${APP}' GROUP BY campaign_id`,
      )
    const atKill = await waitFor(states, (rows) => rows.length > 0, {
      what: 'planning under way',
      timeoutMs: 120_000,
      intervalMs: 20,
    })
    await crash()
    const plannedAtKill = atKill.filter((r) => r.state === 'planned').length
    expect(plannedAtKill).toBeLessThan(CAMPAIGNS)

    sluice = await startSluice(env)
    connect()
    const planned = await waitFor(
      states,
      (rows) => rows.length === CAMPAIGNS && rows.every((r) => r.state !== 'planning'),
      { what: 'every occurrence planned after the restart', timeoutMs: 120_000 },
    )
    // What was cut short was planned again under a new id; nothing was planned twice over.
    for (const cut of atKill.filter((r) => r.state === 'planning'))
      expect(planned.find((r) => r.campaign_id === cut.campaign_id)?.plan_id).not.toBe(cut.plan_id)

    // Kill 2: in the middle of sending.
    const expected = new Map(
      ids.map((id) => [id, new Map(installs.map((i) => [i, variantOf(id, i, CONTROL, CREATIVES)]))]),
    )
    const targeted = [...expected.values()].reduce(
      (n, m) => n + [...m.values()].filter((v) => v !== 'control').length,
      0,
    )
    const recorded = () =>
      sql<{ n: string }>(`SELECT count() AS n FROM push_deliveries WHERE app_id = '${APP}'`)
    const before = await waitFor(recorded, (rows) => Number(rows[0]?.n) >= 3 * BATCH, {
      what: 'the campaigns being sent',
      timeoutMs: 180_000,
    })
    await crash()
    expect(Number(before[0]?.n)).toBeLessThan(targeted)

    sluice = await startSluice(env)
    connect()
    const rows = await waitFor(
      () =>
        sql<{
          campaign_id: number | string
          install_uuid: string
          n: number | string
          creative: string
          status: string
        }>(
          `SELECT campaign_id, install_uuid, count() AS n, any(creative) AS creative, any(status) AS status
             FROM push_deliveries WHERE app_id = '${APP}' GROUP BY campaign_id, install_uuid`,
        ),
      (r) => r.length >= targeted,
      { what: `${targeted} deliveries recorded`, timeoutMs: 180_000 },
    )
    // Exactly once in the record, with the member's variant, every one sent; none to the control group.
    expect(rows.filter((r) => Number(r.n) !== 1)).toEqual([])
    expect(rows.filter((r) => r.status !== 'sent')).toEqual([])
    expect(rows).toHaveLength(targeted)
    for (const r of rows) expect(r.creative).toBe(expected.get(Number(r.campaign_id))?.get(r.install_uuid))
    const assignments = await sql<{ campaign_id: string; install_uuid: string; outcome: string }>(
      // The latest plan of each member (the table keeps the newest planned_at): the finished one.
      `SELECT campaign_id, install_uuid, outcome FROM campaign_sends FINAL WHERE app_id = '${APP}'`,
    )
    expect(assignments).toHaveLength(CAMPAIGNS * INSTALLS)
    for (const a of assignments) {
      const variant = expected.get(Number(a.campaign_id))?.get(a.install_uuid)
      expect(a.outcome).toBe(variant === 'control' ? 'control' : 'targeted')
    }

    // On the wire: every targeted member at least once; a second write only for a batch in
    // flight at the second kill, under the same delivery id.
    const lines = await pushFileLines<{ delivery_id: string; install_uuid: string; campaign_key?: string }>(
      join(dir.path, 'push', APP),
    )
    const written = new Map<string, number>()
    for (const l of lines) written.set(l.delivery_id, (written.get(l.delivery_id) ?? 0) + 1)
    expect(written.size).toBe(targeted)
    const twice = [...written.values()].filter((n) => n > 1)
    expect(twice.every((n) => n === 2)).toBe(true)
    expect(twice.length).toBeLessThanOrEqual(BATCH)
  })
})
