import { join } from 'node:path'
import { expect } from 'vitest'
import { variantOf } from '../../pipelines/campaigns/assign-variant.ts'
import { lines, sessionRow } from './ingestion-scenario.ts'
import { pushFileLines } from './push-file-lines.ts'
import { waitFor } from './wait-for.ts'

const INSTALLS = 600
const CAMPAIGNS = 12
/** Installs per delivery batch (SLUICE_PUSH_BATCH_SIZE): the most a kill mid-send may write twice. */
const BATCH = 100
const CONTROL = 10
const CREATIVES = [
  { letter: 'A', percent: 50 },
  { letter: 'B', percent: 50 },
]

/**
 * How long before their moment the campaigns are planned here: a quarter of the default minute,
 * so that the scenario waits less for its moment (its plans take well under a second).
 */
const PLAN_AHEAD_MS = 15_000

/** The settings of a Sluice the campaign crash scenario runs against, in either mode. */
export const CAMPAIGN_CRASH_ENV = {
  SLUICE_CAMPAIGN_TICK_MS: '300',
  SLUICE_CAMPAIGN_PLAN_AHEAD_MS: String(PLAN_AHEAD_MS),
  // Slow enough that the second kill lands mid-send, with many batches still to go.
  SLUICE_PUSH_SEND_RATE_PER_APP: '400',
  SLUICE_PUSH_BATCH_SIZE: String(BATCH),
}

/** Rows of a query, against whatever holds the data now (the SQL port, or ClickHouse itself). */
export type Sql = <T>(query: string) => Promise<T[]>

export interface CampaignCrashTarget {
  /** The edge (it stays the same across the kills, or is only used before the first). */
  url: string
  auth: string
  orgId: number
  app: string
  sql: Sql
  /** kill -9 of the process(es) that plan and send campaigns. */
  crash(): Promise<void>
  /** Start them again on the same data. */
  restart(): Promise<void>
  /** SLUICE_DATA_DIR of the senders: the file transport writes the app's lines under push/<app>. */
  dataDir: string
}

/**
 * kill -9 twice while campaigns run, in whichever mode `target` is: first while the executor
 * plans (some occurrences planned, others not: their plans are one INSERT … SELECT each, made in
 * one pass), then while the push pipeline sends them. After each restart the executor plans what
 * was left `planning` again under a new plan id and dispatches the planned slots; the push planner
 * resumes. Every member of every campaign ends with exactly one push recorded, with its variant,
 * or none when it is in the control group; on the wire, only a batch in flight at the second kill
 * is written again, under the same delivery id.
 */
export async function runCampaignCrashScenario(t: CampaignCrashTarget): Promise<void> {
  const { app, sql } = t
  const installs = Array.from({ length: INSTALLS }, (_, i) => `ci-${String(i).padStart(4, '0')}`)
  const at = Date.now() - 60_000
  for (let i = 0; i < installs.length; i += 300)
    await uploadSessions(
      t.url,
      app,
      installs.slice(i, i + 300).map((install, j) => ({
        ...sessionRow({ install, customer: `c${i + j}`, at, country: 'fr', model: 'm' }),
        platform: (i + j) % 2 === 0 ? 'iOS' : 'Android',
      })),
    )
  await waitFor(
    () => sql<{ n: string }>(`SELECT count() AS n FROM devices FINAL WHERE app_id = '${app}'`),
    (rows) => Number(rows[0]?.n) === INSTALLS,
    { what: 'the devices', timeoutMs: 90_000 },
  )

  // All scheduled for one moment far enough ahead that creating them all (at once: the control
  // applier takes them together) takes less time than the wait until their plan-ahead window
  // opens: the executor then plans all of them in one pass.
  const begin = Date.now() + PLAN_AHEAD_MS + 30_000
  const ids = await Promise.all(
    Array.from({ length: CAMPAIGNS }, async (_, c) => {
      const res = await fetch(`${t.url}/api/v6/orgs/${t.orgId}/apps/${app}/push/campaigns`, {
        method: 'POST',
        headers: { Authorization: t.auth, 'Content-Type': 'application/json' },
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
      return ((await res.json()) as { id: number }).id
    }),
  )
  expect(Date.now()).toBeLessThan(begin - PLAN_AHEAD_MS)

  // Kill 1: as soon as the pass has begun planning, before it planned them all.
  const states = () =>
    sql<{ campaign_id: string; state: string; plan_id: string }>(
      `SELECT campaign_id, argMax(state, version) AS state, toString(argMax(plan_id, version)) AS plan_id
         FROM campaign_occurrences WHERE app_id = '${app}' GROUP BY campaign_id`,
    )
  const atKill = await waitFor(states, (rows) => rows.length > 0, {
    what: 'planning under way',
    timeoutMs: 120_000,
    intervalMs: 20,
  })
  await t.crash()
  expect(atKill.filter((r) => r.state === 'planned').length).toBeLessThan(CAMPAIGNS)

  await t.restart()
  const planned = await waitFor(
    states,
    (rows) => rows.length === CAMPAIGNS && rows.every((r) => r.state !== 'planning'),
    { what: 'every occurrence planned after the restart', timeoutMs: 120_000 },
  )
  // What was cut short was planned again under a new id.
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
    sql<{ n: string }>(`SELECT count() AS n FROM push_deliveries WHERE app_id = '${app}'`)
  const before = await waitFor(recorded, (rows) => Number(rows[0]?.n) >= 3 * BATCH, {
    what: 'the campaigns being sent',
    timeoutMs: 180_000,
  })
  await t.crash()
  expect(Number(before[0]?.n)).toBeLessThan(targeted)

  await t.restart()
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
           FROM push_deliveries WHERE app_id = '${app}' GROUP BY campaign_id, install_uuid`,
      ),
    (r) => r.length >= targeted,
    { what: `${targeted} deliveries recorded`, timeoutMs: 180_000 },
  )
  // Exactly once in the record, with the member's variant, every one sent; none to the control group.
  expect(rows.filter((r) => Number(r.n) !== 1)).toEqual([])
  expect(rows.filter((r) => r.status !== 'sent')).toEqual([])
  expect(rows).toHaveLength(targeted)
  for (const r of rows) expect(r.creative).toBe(expected.get(Number(r.campaign_id))?.get(r.install_uuid))
  // The standing plan of each occurrence (its plan id): every member once, held out or targeted.
  const assignments = await sql<{ campaign_id: string; install_uuid: string; outcome: string }>(
    `SELECT s.campaign_id AS campaign_id, s.install_uuid AS install_uuid, s.outcome AS outcome
       FROM campaign_sends AS s
       INNER JOIN (SELECT campaign_id, argMax(plan_id, version) AS plan_id FROM campaign_occurrences
                   WHERE app_id = '${app}' GROUP BY campaign_id) AS o
         ON o.campaign_id = s.campaign_id AND toInt64(o.plan_id) = toUnixTimestamp64Milli(s.planned_at)
      WHERE s.app_id = '${app}'`,
  )
  expect(assignments).toHaveLength(CAMPAIGNS * INSTALLS)
  for (const a of assignments) {
    const variant = expected.get(Number(a.campaign_id))?.get(a.install_uuid)
    expect(a.outcome).toBe(variant === 'control' ? 'control' : 'targeted')
  }

  // On the wire: every targeted member at least once; a second write only for a batch in
  // flight at the second kill, under the same delivery id.
  const lines = await pushFileLines<{ delivery_id: string }>(join(t.dataDir, 'push', app))
  const written = new Map<string, number>()
  for (const l of lines) written.set(l.delivery_id, (written.get(l.delivery_id) ?? 0) + 1)
  expect(written.size).toBe(targeted)
  const twice = [...written.values()].filter((n) => n > 1)
  expect(twice.every((n) => n === 2)).toBe(true)
  expect(twice.length).toBeLessThanOrEqual(BATCH)
}

/**
 * An SDK upload, sent again while the edge sheds load (503 and Retry-After: its workers just
 * started and their consumer groups are still forming) or drops the connection, for a minute.
 * A repeat is harmless here: the devices table keeps one row per install.
 */
async function uploadSessions(url: string, app: string, rows: unknown[]): Promise<void> {
  const deadline = Date.now() + 60_000
  for (;;) {
    let status: number | string
    try {
      const res = await fetch(`${url}/v1/sdk/apps/${app}/uploads`, {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: lines(rows),
      })
      status = res.status
      const body = await res.text()
      if (status === 202) return
      if (status !== 503) throw new Error(`upload answered ${status}: ${body}`)
    } catch (err) {
      if (err instanceof Error && err.message.startsWith('upload answered')) throw err
      status = err instanceof Error ? err.message : String(err)
    }
    if (Date.now() > deadline) throw new Error(`upload not accepted within a minute (last: ${status})`)
    await new Promise((resolve) => setTimeout(resolve, 1000))
  }
}
