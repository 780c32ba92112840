import { describe, expect, it } from 'vitest'
import { dueJobCommand } from '../../pipelines/control/jobs.ts'
import { emptyExportState, type ExportJobRow } from '../../pipelines/exports/export-commands.ts'
import { DAY_MS, HOUR_MS } from '../../pipelines/exports/export-kinds.ts'
import { exportRefreshJob } from '../../pipelines/exports/export-jobs.ts'
import {
  DEFAULT_IDLE_MS,
  idleDeadline,
  nextState,
  stateAt,
  type ExportState,
} from '../../pipelines/exports/export-state.ts'
import {
  hourComplete,
  latestRefreshAt,
  parseRefreshTime,
  refreshDate,
} from '../../pipelines/exports/refresh-schedule.ts'
import {
  CONTROL,
  type ControlState,
  newCommand,
  type CommandPayload,
} from '../../services/control/control-plane.ts'

const { applyCommands } = CONTROL

const T0 = Date.UTC(2026, 5, 1, 12)

describe('export lifecycle (the spec states table)', () => {
  it('follows every row of the table', () => {
    const rows: [ExportState, Parameters<typeof nextState>[1], ExportState][] = [
      ['not_enabled', { kind: 'enable', sourceExists: true }, 'available'],
      ['not_enabled', { kind: 'enable', sourceExists: false }, 'not_enabled'],
      ['available', { kind: 'idle' }, 'unavailable'],
      ['available', { kind: 'source-deleted' }, 'unavailable'],
      ['available', { kind: 'disable' }, 'disabled'],
      ['unavailable', { kind: 'disable' }, 'disabled'],
      ['disabled', { kind: 'enable', sourceExists: true }, 'available'],
      ['unavailable', { kind: 'enable', sourceExists: true }, 'available'],
      ['available', { kind: 'request' }, 'available'],
      ['unavailable', { kind: 'request' }, 'unavailable'],
      ['disabled', { kind: 'idle' }, 'disabled'],
      ['not_enabled', { kind: 'disable' }, 'not_enabled'],
    ]
    for (const [from, event, to] of rows) expect(nextState(from, event), `${from} + ${event.kind}`).toBe(to)
  })

  it('derives the state from what is recorded: 45 days without a request, from the last request or enabling', () => {
    const job = { enabled: true, enabledAt: T0, lastRequestedAt: undefined, sourceExists: true }
    expect(stateAt(undefined, T0)).toBe('not_enabled')
    expect(stateAt(job, T0 + 45 * DAY_MS)).toBe('available')
    expect(stateAt(job, T0 + 45 * DAY_MS + 1)).toBe('unavailable')
    const requested = { ...job, lastRequestedAt: T0 + 10 * DAY_MS }
    expect(stateAt(requested, T0 + 50 * DAY_MS)).toBe('available')
    expect(stateAt(requested, T0 + 55 * DAY_MS + 1)).toBe('unavailable')
    expect(idleDeadline(requested)).toBe(T0 + 10 * DAY_MS + DEFAULT_IDLE_MS)
    // Enabled again later: 45 days afresh.
    expect(stateAt({ ...requested, enabledAt: T0 + 60 * DAY_MS }, T0 + 61 * DAY_MS)).toBe('available')
    expect(stateAt({ ...job, sourceExists: false }, T0)).toBe('unavailable')
    expect(stateAt({ ...job, enabled: false }, T0)).toBe('disabled')
    expect(stateAt(job, T0 + 2 * DAY_MS, DAY_MS)).toBe('unavailable')
  })
})

describe('the daily refresh: 08:00 America/New_York, once per day', () => {
  const ny = parseRefreshTime('08:00', 'America/New_York')!

  it('names each day by its refresh instant, across daylight saving time', () => {
    // Winter (EST, UTC-5) and summer (EDT, UTC-4).
    expect(latestRefreshAt(Date.UTC(2026, 0, 15, 14), ny)).toBe(Date.UTC(2026, 0, 15, 13))
    expect(latestRefreshAt(Date.UTC(2026, 0, 15, 12, 59), ny)).toBe(Date.UTC(2026, 0, 14, 13))
    expect(latestRefreshAt(Date.UTC(2026, 6, 15, 12), ny)).toBe(Date.UTC(2026, 6, 15, 12))
    expect(latestRefreshAt(Date.UTC(2026, 6, 15, 11, 59, 59), ny)).toBe(Date.UTC(2026, 6, 14, 12))
    // The day clocks go forward (8 March 2026): 08:00 EDT is 12:00 UTC; the day before was 13:00.
    expect(latestRefreshAt(Date.UTC(2026, 2, 8, 12, 30), ny)).toBe(Date.UTC(2026, 2, 8, 12))
    expect(latestRefreshAt(Date.UTC(2026, 2, 8, 11, 30), ny)).toBe(Date.UTC(2026, 2, 7, 13))
    expect(refreshDate(Date.UTC(2026, 2, 8, 12), 'America/New_York')).toBe('2026-03-08')
  })

  it('every scheduler tick of a day emits the same command: the applier runs it once', () => {
    const job = exportRefreshJob({
      bus: undefined as never,
      topic: 't',
      refreshTime: ny,
      idleMs: DEFAULT_IDLE_MS,
      logGraceMs: 0,
    })
    const ids = new Set<string>()
    // Ticks from 08:00 NY on one day to 07:59 the next, as two schedulers or a restart would make.
    for (let t = Date.UTC(2026, 6, 15, 12); t < Date.UTC(2026, 6, 16, 12); t += 7 * 60_000)
      ids.add(dueJobCommand(job, t).id)
    expect([...ids]).toEqual([`export-refresh:${Date.UTC(2026, 6, 15, 12)}`])
    expect(dueJobCommand(job, Date.UTC(2026, 6, 16, 12)).id).toBe(
      `export-refresh:${Date.UTC(2026, 6, 16, 12)}`,
    )
    // Applied twice (two schedulers put it on the topic): one run.
    const state: ControlState = {
      maxIds: { orgs: 0, profile_dbs: 0 },
      orgs: new Set(),
      apps: new Map(),
      keys: new Map(),
      audiences: { maxId: 0, rows: new Map() },
    }
    const a = dueJobCommand(job, Date.UTC(2026, 6, 15, 13))
    const b = dueJobCommand(job, Date.UTC(2026, 6, 15, 20))
    const { applied } = applyCommands(state, [a, b], new Set(['export-refresh']))
    expect(applied.filter((x) => x.job)).toHaveLength(1)
  })

  it('validates the configured time and zone', () => {
    expect(parseRefreshTime('8:05', 'Europe/Paris')).toEqual({ hour: 8, minute: 5, zone: 'Europe/Paris' })
    expect(parseRefreshTime('24:00', 'UTC')).toBeUndefined()
    expect(parseRefreshTime('08:00', 'Mars/Olympus')).toBeUndefined()
  })

  it('an hour of log is complete once it and its grace are over', () => {
    const hour = Date.UTC(2026, 6, 15, 10)
    expect(hourComplete(hour, hour + HOUR_MS + 10 * 60_000 - 1, 10 * 60_000)).toBe(false)
    expect(hourComplete(hour, hour + HOUR_MS + 10 * 60_000, 10 * 60_000)).toBe(true)
  })
})

describe('export commands (the control applier)', () => {
  const AT = T0
  let n = 0
  const enable = (payload: Partial<CommandPayload<'enable-export'>> = {}, at = AT) =>
    newCommand(
      'enable-export',
      {
        org_id: 1,
        source_type: 'profiles',
        source_id: '10',
        job_types: ['profile', 'profile_changes'],
        caps: { audiences: 2, audiences_remarketing: 3, profiles: 2 },
        ...payload,
      },
      at,
      `e${++n}`,
    )
  const state = (jobs: ExportJobRow[] = []): ControlState => ({
    maxIds: { orgs: 2, profile_dbs: 20 },
    orgs: new Set([1, 2]),
    apps: new Map(),
    keys: new Map(),
    audiences: { maxId: 0, rows: new Map() },
    exports: {
      ...emptyExportState(),
      maxId: Math.max(0, ...jobs.map((j) => j.id)),
      orgs: new Set([1, 2]),
      jobs: new Map(jobs.map((j) => [j.id, j])),
      profileDbs: new Map([
        [10, { org_id: 1, app_id: '' }],
        [11, { org_id: 1, app_id: 'a1' }],
        [12, { org_id: 1, app_id: 'a2' }],
        [20, { org_id: 2, app_id: '' }],
      ]),
      apps: new Map([['a1', { org_id: 1, name: 'App one' }]]),
      audiences: new Map([
        [5, { org_id: 1, app_id: 'a1', name: 'Buyers' }],
        [6, { org_id: 1, app_id: 'a1', name: 'Browsers' }],
        [7, { org_id: 1, app_id: 'a1', name: 'Others' }],
        [8, { org_id: 2, app_id: 'b1', name: 'Theirs' }],
      ]),
    },
  })
  const jobs = new Set<string>()

  it('enables one job per job type, with ids of its own, and again with the same ids', () => {
    const first = applyCommands(state(), [enable()], jobs).applied[0]!
    expect(first.result.status).toBe(201)
    const rows = first.writes.export_jobs
    expect(rows.map((r) => [r.id, r.job_type, r.source_id, r.app_id, r.name, r.enabled])).toEqual([
      [1, 'profile', '10', '', 'profiles of org 1', 1],
      [2, 'profile_changes', '10', '', 'profiles of org 1', 1],
    ])
    const disabled = { ...rows[0]!, enabled: 0 as const, disabled_at: AT + 5, version: AT + 5 }
    const again = applyCommands(state([disabled, rows[1]!]), [enable({}, AT + 10)], jobs).applied[0]!
    expect(again.writes.export_jobs.map((r) => [r.id, r.enabled, r.enabled_at, r.disabled_at])).toEqual([
      [1, 1, AT + 10, null],
      [2, 1, AT + 10, null],
    ])
    expect(again.writes.export_jobs[0]!.version).toBeGreaterThan(disabled.version)
  })

  it('caps profile exports by profile db, and audience exports by the plan', () => {
    const two = applyCommands(state(), [enable(), enable({ source_id: '11', job_types: ['profile'] })], jobs)
    const after = two.applied.flatMap((a) => a.writes.export_jobs)
    expect(after).toHaveLength(3)
    const third = applyCommands(state(after), [enable({ source_id: '12' })], jobs).applied[0]!
    expect(third.result).toEqual({
      status: 409,
      body: {
        error: 'org 1 has 2 profiles exports enabled, the most its plan allows (2); disable one first',
      },
    })
    // Another job type of a source already counted is no new export.
    expect(applyCommands(state(after), [enable({ source_id: '11' })], jobs).applied[0]!.result.status).toBe(
      201,
    )
    // Disabled ones free their place.
    const freed = after.map((j) => (j.source_id === '11' ? { ...j, enabled: 0 as const } : j))
    expect(applyCommands(state(freed), [enable({ source_id: '12' })], jobs).applied[0]!.result.status).toBe(
      201,
    )

    const audience = (id: string) => enable({ source_type: 'audiences', source_id: id, job_types: ['idfa'] })
    const standard = applyCommands(state(), [audience('5'), audience('6'), audience('7')], jobs).applied
    expect(standard.map((a) => a.result.status)).toEqual([201, 201, 409])
    const plan = newCommand('set-export-plan', { org_id: 1, plan: 'remarketing' }, AT, 'plan')
    const remarketing = applyCommands(
      state(),
      [plan, audience('5'), audience('6'), audience('7')],
      jobs,
    ).applied
    expect(remarketing.map((a) => a.result.status)).toEqual([200, 201, 201, 201])
    expect(remarketing[1]!.writes.export_jobs[0]!.name).toBe('Buyers')
  })

  it('refuses sources of another org, unknown sources and job types of another source type', () => {
    const statuses = applyCommands(
      state(),
      [
        enable({ source_id: '20' }),
        enable({ source_id: '99' }),
        enable({ source_type: 'audiences', source_id: '8', job_types: ['idfa'] }),
        enable({ source_type: 'logs', source_id: 'b1', job_types: ['logs'] }),
        enable({ job_types: ['idfa'] }),
        enable({ org_id: 9 }),
      ],
      jobs,
    ).applied.map((a) => a.result.status)
    expect(statuses).toEqual([404, 404, 404, 404, 422, 404])
    const logs = applyCommands(
      state(),
      [enable({ source_type: 'logs', source_id: 'a1', job_types: ['logs'] })],
      jobs,
    )
    expect(logs.applied[0]!.writes.export_jobs[0]).toMatchObject({ app_id: 'a1', name: 'raw log of App one' })
  })

  it('disables a job of its org only', () => {
    const rows = applyCommands(state(), [enable()], jobs).applied[0]!.writes.export_jobs
    const disable = (org: number, id: number) =>
      newCommand('disable-export', { org_id: org, export_id: id }, AT + 1, `d${++n}`)
    const done = applyCommands(state(rows), [disable(1, 1), disable(2, 2), disable(1, 99)], jobs).applied
    expect(done.map((a) => a.result.status)).toEqual([204, 404, 404])
    expect(done[0]!.writes.export_jobs).toEqual([
      expect.objectContaining({ id: 1, enabled: 0, disabled_at: AT + 1 }),
    ])
  })
})
