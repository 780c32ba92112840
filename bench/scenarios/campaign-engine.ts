import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { loadConfig } from '../../services/config.ts'
import { startProcess } from '../../services/processes.ts'
import { createLogger } from '../../services/shared/logger.ts'

/**
 * The campaign scenario's engine, a child process (chdb binds one data directory per process):
 * argv = installs. A whole embedded Sluice (edge, workers, scheduler) on a temporary data
 * directory; `installs` devices with push tokens are written straight into its `devices` table
 * (this measures sending, not ingestion). Then, one after the other, each to the file transport:
 *
 * - broadcast: POST /v2/push/:app with target_type broadcast, from its 202 to the last delivery
 *   recorded sent (the push pipeline's own fan-out, the baseline);
 * - campaign: an active push campaign to everyone, 2 creatives (50/50) and a 10 % control group,
 *   scheduled `lead ms` ahead (the executor plans it ahead of its start), from its scheduled
 *   moment to the first and to the last delivery recorded sent; and how long its plan took.
 *
 * Prints one JSON line.
 */
const installs = Number(process.argv[2])
// How far ahead the campaign is scheduled (ms): its plan is made before its start (PLAN_AHEAD_MS).
const leadMs = Number(process.argv[3] ?? 15_000)
if (!Number.isInteger(installs) || installs <= 0 || !Number.isFinite(leadMs) || leadMs < 0) {
  process.stderr.write('usage: campaign-engine <installs> [lead ms]\n')
  process.exit(2)
}

const phase = (s: string) => process.stderr.write(`${s}\n`)
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

async function main() {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-bench-campaign-'))
  const token = randomBytes(24).toString('hex')
  const config = loadConfig({
    SLUICE_DATA_DIR: dataDir,
    PORT: '0',
    HOST: '127.0.0.1',
    SLUICE_SQL_PORT: '0',
    SLUICE_ADMIN_TOKEN: token,
    SLUICE_PUSH_SEND_RATE_PER_APP: '0',
    SLUICE_CAMPAIGN_TICK_MS: '500',
  })
  const sluice = await startProcess(config, createLogger('error'), ['edge', 'worker', 'scheduler'])
  const store = sluice.runtime.store
  try {
    const admin = async <T>(path: string, body: unknown): Promise<T> => {
      const res = await fetch(`${sluice.url}/admin/v1${path}`, {
        method: 'POST',
        headers: { Authorization: `Bearer ${token}`, 'Content-Type': 'application/json' },
        body: JSON.stringify(body),
      })
      if (!res.ok) throw new Error(`admin ${path}: ${res.status} ${await res.text()}`)
      return (await res.json()) as T
    }
    const org = await admin<{ id: number }>('/orgs', { name: 'bench' })
    const app = 'bench-campaigns'
    await admin(`/orgs/${org.id}/apps`, { name: app, app_id: app })
    const key = await admin<{ api_key: string; api_secret: string }>(`/orgs/${org.id}/keys`, {})
    const auth = `Basic ${Buffer.from(`${key.api_key}:${key.api_secret}`).toString('base64')}`

    phase(`writing ${installs} devices`)
    await store.command(
      `INSERT INTO devices (app_id, install_uuid, device_uuid, customer_id, last_active_at, platform, device_timezone,
                            push_token, push_status, version)
       SELECT {app:String}, concat('inst-', leftPad(toString(number), 8, '0')), concat('dev-', toString(number)),
              concat('cust-', toString(number)), now64(3), if(number % 2 = 0, 'iOS', 'Android'), 'UTC',
              concat('tok-', toString(number)), 'Enabled (Prominent)', 1
       FROM numbers({n:UInt64})`,
      { app, n: installs },
    )

    const delivered = async (where: string, params: Record<string, unknown>) => {
      const rows = await store.query<{ n: string | number; first: string | number; last: string | number }>(
        `SELECT count() AS n, toUnixTimestamp64Milli(min(finished_at)) AS first,
                toUnixTimestamp64Milli(max(finished_at)) AS last FROM push_deliveries
         WHERE app_id = {app:String} AND status = 'sent' AND ${where}`,
        { app, ...params },
      )
      return {
        n: Number(rows[0]?.n ?? 0),
        first: Number(rows[0]?.first ?? 0),
        last: Number(rows[0]?.last ?? 0),
      }
    }
    const waitDelivered = async (
      what: string,
      expected: () => Promise<number>,
      count: () => Promise<{ n: number; first: number; last: number }>,
    ) => {
      const deadline = Date.now() + 30 * 60_000
      for (;;) {
        const want = await expected()
        const got = await count()
        phase(`${what}: ${got.n}/${want || '?'} sent`)
        if (want > 0 && got.n >= want) return got
        if (Date.now() > deadline) throw new Error(`${what}: only ${got.n} of ${want} sent in 30 minutes`)
        await sleep(2000)
      }
    }

    // The baseline: the push pipeline's own broadcast.
    phase('broadcast')
    const requestId = `bench-broadcast-${Date.now()}`
    const res = await fetch(`${sluice.url}/v2/push/${app}`, {
      method: 'POST',
      headers: { Authorization: auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        request_id: requestId,
        target_type: 'broadcast',
        messages: [{ alert: 'Hello' }],
      }),
    })
    const accepted = Date.now()
    if (res.status !== 202) throw new Error(`broadcast: ${res.status} ${await res.text()}`)
    const broadcast = await waitDelivered(
      'broadcast',
      async () => installs,
      () => delivered('request_id = {id:String}', { id: requestId }),
    )
    const broadcastMs = broadcast.last - accepted

    // The campaign, scheduled leadMs ahead.
    phase('campaign')
    const begin = Date.now() + leadMs
    const created = await fetch(`${sluice.url}/api/v6/orgs/${org.id}/apps/${app}/push/campaigns`, {
      method: 'POST',
      headers: { Authorization: auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        name: 'bench',
        status: 'active',
        goal: 'notify',
        audiences: { campaign_type: 'everyone', control_group_percent: 10 },
        schedule: { on_schedule: { begin_date: new Date(begin).toISOString() } },
        creatives: [
          { percent: 50, build_attributes: { push_message: 'A', push_title: 'Offer' } },
          { percent: 50, build_attributes: { push_message: 'B' } },
        ],
      }),
    })
    if (created.status !== 201) throw new Error(`campaign: ${created.status} ${await created.text()}`)
    const id = ((await created.json()) as { id: number }).id
    const occurrence = async () =>
      (
        await store.query<{
          targeted: string | number
          held_out: string | number
          state: string
          planned: string | number
          plan_id: string | number
        }>(
          `SELECT targeted, held_out, state, toUnixTimestamp64Milli(updated_at) AS planned, plan_id
           FROM campaign_occurrences FINAL WHERE campaign_id = {id:UInt64} AND state IN ('planned', 'done')`,
          { id },
        )
      )[0]
    let planMs = 0
    let plannedBeforeStartMs = 0
    let heldOut = 0
    const campaign = await waitDelivered(
      'campaign',
      async () => {
        const o = await occurrence()
        if (!o || o.state === 'planning') return 0
        // The plan's own duration: from its id (when planning began) to the occurrence recorded planned.
        if (planMs === 0) {
          planMs = Number(o.planned) - Number(o.plan_id)
          plannedBeforeStartMs = begin - Number(o.planned)
        }
        heldOut = Number(o.held_out)
        return Number(o.targeted)
      },
      () => delivered('campaign_id = {id:UInt64}', { id }),
    )
    const campaignMs = campaign.last - begin
    // Where the time to the first push goes: the slot handed to the push pipeline, the first
    // delivery batch planned and first attempted (a delivery is recorded sent when its batch is done).
    const [path] = await store.query<{
      dispatched: string | number
      planned: string | number
      attempted: string | number
    }>(
      `SELECT
         (SELECT toUnixTimestamp64Milli(min(received_at)) FROM push_requests WHERE app_id = {app:String} AND campaign_id = {id:UInt64}) AS dispatched,
         toUnixTimestamp64Milli(min(planned_at)) AS planned, toUnixTimestamp64Milli(min(first_attempt_at)) AS attempted
       FROM push_deliveries WHERE app_id = {app:String} AND campaign_id = {id:UInt64}`,
      { app, id },
    )
    const broadcastRate = (installs * 1000) / broadcastMs
    const campaignRate = (campaign.n * 1000) / campaignMs
    process.stdout.write(
      `${JSON.stringify({
        installs,
        broadcastMs,
        broadcastPerSecond: broadcastRate,
        campaignPushes: campaign.n,
        heldOut,
        campaignMs,
        campaignPlanMs: planMs,
        campaignPlannedBeforeStartMs: plannedBeforeStartMs,
        campaignFirstPushMs: campaign.first - begin,
        campaignDispatchedMs: Number(path?.dispatched) - begin,
        campaignFirstBatchPlannedMs: Number(path?.planned) - begin,
        campaignFirstAttemptMs: Number(path?.attempted) - begin,
        campaignPerSecond: campaignRate,
        ratio: campaignRate / broadcastRate,
      })}\n`,
    )
  } finally {
    await sluice.shutdown()
    rmSync(dataDir, { recursive: true, force: true })
  }
}

main().then(
  () => process.exit(0),
  (err: unknown) => {
    process.stderr.write(
      `campaign engine: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`,
    )
    process.exit(1)
  },
)
