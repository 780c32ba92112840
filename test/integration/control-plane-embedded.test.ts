import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { CommandClient } from '../../services/control/command-client.ts'
import { encodeCommand } from '../../pipelines/control/commands.ts'
import { readResults, writeResults } from '../../pipelines/control/control-results.ts'
import { readState } from '../../pipelines/control/control-state.ts'
import { ControlStore } from '../../services/control/control-store.ts'
import type { ScheduledJob } from '../../pipelines/control/jobs.ts'
import { DeadLetterStore } from '../../pipelines/failures/dead-letters.ts'
import { createEdgeApp } from '../../services/edge/app.ts'
import type { Runtime } from '../../services/runtime.ts'
import { startScheduler } from '../../services/scheduler/scheduler.ts'
import { createLogger } from '../../services/shared/logger.ts'
import { topology } from '../../services/topology.ts'
import { controlPipeline } from '../../services/worker/control.ts'
import { startWorker } from '../../services/worker/worker.ts'
import { ADMIN_TOKEN, adminHeaders } from '../helpers/edge.ts'
import { manualClock } from '../helpers/manual-clock.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { CONTROL, newCommand } from '../../services/control/control-plane.ts'

const { applyCommands, stateNeeds } = CONTROL

/**
 * The control plane in embedded mode: admin writes are commands on the local log, applied by the
 * control applier in the same process, exactly as Kafka + ClickHouse run them in distributed mode.
 */
describe('control plane, embedded mode', () => {
  let sluice: InProcessSluice
  let runtime: Runtime
  const post = (path: string, body: unknown) =>
    fetch(`${sluice.url}/admin/v1${path}`, {
      method: 'POST',
      headers: adminHeaders,
      body: JSON.stringify(body),
    })
  const orgCount = async (name: string) =>
    Number(
      (
        await runtime.store.query<{ n: string }>(
          'SELECT count() AS n FROM orgs FINAL WHERE name = {name:String}',
          {
            name,
          },
        )
      )[0]?.n,
    )

  beforeAll(async () => {
    sluice = await startInProcess()
    runtime = sluice.running.runtime
  })
  afterAll(() => sluice.close())

  it('concurrent creates get distinct, consecutive ids; one app id taken twice at once is one 201 and one 409', async () => {
    const first = (await (await post('/orgs', { name: 'first' })).json()) as {
      id: number
      profiledb_id: number
    }
    const responses = await Promise.all(
      Array.from({ length: 60 }, (_, i) => post('/orgs', { name: `org-${i}` })),
    )
    expect(responses.map((r) => r.status)).toEqual(responses.map(() => 201))
    const orgs = (await Promise.all(responses.map((r) => r.json()))) as { id: number; profiledb_id: number }[]
    const ids = orgs.map((o) => o.id).sort((a, b) => a - b)
    expect(ids).toEqual(Array.from({ length: 60 }, (_, i) => first.id + 1 + i))
    expect(new Set(orgs.map((o) => o.profiledb_id)).size).toBe(60)
    const listed = (await (await fetch(`${sluice.url}/admin/v1/orgs`, { headers: adminHeaders })).json()) as {
      id: number
    }[]
    expect(listed.map((o) => o.id)).toEqual([first.id, ...ids])

    const both = await Promise.all([
      post(`/orgs/${first.id}/apps`, { name: 'one', app_id: 'contested' }),
      post(`/orgs/${first.id}/apps`, { name: 'two', app_id: 'contested' }),
    ])
    expect(both.map((r) => r.status).sort()).toEqual([201, 409])
    const won = (await both.find((r) => r.status === 201)!.json()) as { name: string; profiledb_id: number }
    const lost = (await both.find((r) => r.status === 409)!.json()) as { error: string }
    expect(lost.error).toBe('app_id contested already exists')
    const apps = (await (
      await fetch(`${sluice.url}/admin/v1/orgs/${first.id}/apps`, { headers: adminHeaders })
    ).json()) as { app_id: string; name: string; profiledb_id: number }[]
    expect(apps).toEqual([
      { app_id: 'contested', org_id: first.id, name: won.name, profiledb_id: won.profiledb_id },
    ])
  })

  it('a command delivered twice is applied once, and the second copy answers what the first did', async () => {
    const { topic } = runtime.topology.topics.control
    const client = new CommandClient({ bus: runtime.bus, store: runtime.store, topic, waitMs: 20_000 })
    const command = newCommand('create-org', { name: 'delivered-twice' }, Date.now())
    const once = await client.submit(command)
    const twice = await client.submit(command)
    expect(once).toMatchObject({ status: 201, body: { name: 'delivered-twice' } })
    expect(twice).toEqual(once)
    expect(await orgCount('delivered-twice')).toBe(1)
  })

  it('a command an earlier owner journaled but did not finish is finished with its journaled ids', async () => {
    const { store, bus, topology } = runtime
    // What a dying owner left: the journal row (applied = 0, with its rows), none of the rows.
    const command = newCommand('create-org', { name: 'journaled' }, Date.now())
    const state = await readState(store, CONTROL, stateNeeds([command]))
    const { applied } = applyCommands(state, [command], new Set())
    const planned = applied[0]!
    await writeResults(store, [planned], false, Date.now())
    expect(await orgCount('journaled')).toBe(0)
    // A fresh command taken meanwhile must not get the journaled id.
    const later = newCommand('create-org', { name: 'after-journaled' }, Date.now())
    const { topic } = topology.topics.control
    await bus.produce(topic, [encodeCommand(command), encodeCommand(later)])
    const results = await waitFor(
      () => readResults(store, [command.id, later.id]),
      (r) => [...r.values()].filter((x) => x.applied).length === 2,
      { what: 'both commands applied' },
    )
    expect(results.get(command.id)).toMatchObject({ status: 201, body: planned.result.body })
    const journaledId = (planned.result.body as { id: number }).id
    expect((results.get(later.id)?.body as { id: number }).id).toBe(journaledId + 1)
    expect(await orgCount('journaled')).toBe(1)
    expect(await runtime.control.getOrg(journaledId)).toEqual(planned.result.body)
  })

  it('a record on the control topic that does not decode is dead-lettered, and the next command applies', async () => {
    const { topic } = runtime.topology.topics.control
    await runtime.bus.produce(topic, [
      { partition: 0, value: Buffer.from('{"v":1,"kind":"drop-everything"}') },
    ])
    const res = await post('/orgs', { name: 'after-garbage' })
    expect(res.status).toBe(201)
    const letters = await new DeadLetterStore(runtime.store).list({ stage: 'control-applier', limit: 10 })
    expect(letters).toEqual([
      expect.objectContaining({
        topic,
        preview: '{"v":1,"kind":"drop-everything"}',
        error: expect.stringMatching(/malformed control command/),
      }),
    ])
  })

  it('an admin write no worker applies answers 503 with Retry-After once SLUICE_CONTROL_WAIT_MS has passed', async () => {
    // A control topic nobody consumes: the edge waits its bound, then says so.
    const nobody = new CommandClient({
      bus: runtime.bus,
      store: runtime.store,
      topic: 'unconsumed.control',
      waitMs: 200,
    })
    const app = createEdgeApp({
      control: new ControlStore(runtime.store, 0, {}, nobody),
      logger: createLogger('silent'),
      metrics: runtime.metrics,
      adminToken: ADMIN_TOKEN,
      readiness: [],
      isDraining: () => false,
    })
    const res = await app.request('/admin/v1/orgs', {
      method: 'POST',
      headers: adminHeaders,
      body: '{"name":"x"}',
    })
    expect(res.status).toBe(503)
    expect(res.headers.get('Retry-After')).toBe('5')
    expect(((await res.json()) as { error: string }).error).toMatch(/did not apply the command in time/)
  })

  it('shows when each scheduled job last ran (the heartbeat the scheduler emits at start)', async () => {
    const runs = await waitFor(
      async () =>
        (await (await fetch(`${sluice.url}/admin/v1/jobs`, { headers: adminHeaders })).json()) as {
          job: string
          status: number
          period_start: string
          ran_at: string
        }[],
      (r) => r.some((run) => run.job === 'heartbeat'),
      { what: 'a heartbeat run' },
    )
    const heartbeat = runs.find((r) => r.job === 'heartbeat')!
    expect(heartbeat).toMatchObject({ status: 200, output: null })
    expect(Date.parse(heartbeat.period_start) % 60_000).toBe(0)
    expect(Date.parse(heartbeat.ran_at)).toBeGreaterThanOrEqual(Date.parse(heartbeat.period_start))
  })

  it('two schedulers emitting the same (job, period), and one restarted mid-period, run each period once', async () => {
    // A control plane of its own (another topic prefix) whose applier knows a job that counts its runs.
    const own: Runtime = { ...runtime, topology: topology('jobs-test.', 1) }
    const ran: number[] = []
    const job: ScheduledJob = {
      name: 'count',
      intervalMs: 60_000,
      run: ({ periodStart }) => {
        ran.push(periodStart)
        return Promise.resolve({ counted: ran.length })
      },
    }
    const worker = await startWorker(own, [controlPipeline([job])])
    const clock = manualClock(Date.now())
    const first = clock.now() - (clock.now() % 60_000)
    const hour = 3_600_000
    const a = startScheduler(own, [job], { clock, tickMs: hour })
    const b = startScheduler(own, [job], { clock, tickMs: hour })
    try {
      await Promise.all([a.tick(), b.tick()])
      clock.advance(60_000)
      await Promise.all([a.tick(), b.tick()])
      clock.advance(30_000)
      await Promise.all([a.tick(), b.tick()])
      // A scheduler restarted mid-period emits the period again.
      const c = startScheduler(own, [job], { clock, tickMs: hour })
      await c.tick()
      clock.advance(30_000)
      await Promise.all([a.tick(), b.tick(), c.tick()])
      await c.close()
    } finally {
      await a.close()
      await b.close()
    }
    const { group, topic } = own.topology.stages.controlApplier
    await waitFor(
      () => runtime.bus.lag(group, topic),
      (lag) => lag === 0,
      { what: 'every emitted command applied' },
    )
    await worker.close()
    const periods = [first, first + 60_000, first + 120_000]
    expect(ran).toEqual(periods)
    const results = await readResults(
      runtime.store,
      periods.map((p) => `count:${p}`),
    )
    expect(periods.map((p) => results.get(`count:${p}`))).toEqual(
      periods.map((p, i) => ({
        applied: true,
        status: 200,
        body: { job: 'count', period_start: p, output: { counted: i + 1 } },
        writes: undefined,
      })),
    )
  })
})
