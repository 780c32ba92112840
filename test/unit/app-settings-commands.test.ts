import { describe, expect, it } from 'vitest'
import type { AppSettingsState } from '../../pipelines/query/app-settings-commands.ts'
import {
  CONTROL,
  newCommand,
  type CommandPayload,
  type ControlState,
} from '../../services/control/control-plane.ts'

const { applyCommands, stateNeeds } = CONTROL

const AT = 1_700_000_000_000
let n = 0
const set = (payload: CommandPayload<'set-app-settings'>, at = AT) =>
  newCommand('set-app-settings', payload, at, `s${++n}`)

const state = (apps: Record<string, AppSettingsState>): ControlState => ({
  maxIds: { orgs: 0, profile_dbs: 0 },
  orgs: new Set(),
  apps: new Map(),
  keys: new Map(),
  audiences: { maxId: 0, rows: new Map() },
  appSettings: new Map(Object.entries(apps)),
})

describe('app settings commands (pure)', () => {
  it('a set changes the fields it names, keeps the others, and a null label removes it', () => {
    const { applied } = applyCommands(
      state({ a1: { orgId: 1, row: undefined } }),
      [
        set({
          org_id: 1,
          app_id: 'a1',
          time_zone: 'Europe/Paris',
          custom_dimensions: { custom_0_dimension: 'Blood Type', custom_1_dimension: 'Moon Phase' },
        }),
        set(
          {
            org_id: 1,
            app_id: 'a1',
            icon_url: 'https://i.example/a.png',
            custom_dimensions: { custom_0_dimension: null },
          },
          AT + 1,
        ),
      ],
      new Set(),
    )
    expect(applied.map((a) => a.result)).toEqual([
      {
        status: 200,
        body: {
          app_id: 'a1',
          time_zone: 'Europe/Paris',
          icon_url: '',
          custom_dimensions: { custom_0_dimension: 'Blood Type', custom_1_dimension: 'Moon Phase' },
        },
      },
      {
        status: 200,
        body: {
          app_id: 'a1',
          time_zone: 'Europe/Paris',
          icon_url: 'https://i.example/a.png',
          custom_dimensions: { custom_1_dimension: 'Moon Phase' },
        },
      },
    ])
    expect(applied[1]!.writes.app_settings).toEqual([
      {
        app_id: 'a1',
        org_id: 1,
        time_zone: 'Europe/Paris',
        icon_url: 'https://i.example/a.png',
        custom_dimensions: '{"custom_1_dimension":"Moon Phase"}',
        updated_at: AT + 1,
        version: AT + 1,
      },
    ])
  })

  it('refuses an app of another org (404) and a zone that is not an IANA zone (400), writing nothing', () => {
    const { applied } = applyCommands(
      state({ a1: { orgId: 1, row: undefined } }),
      [
        set({ org_id: 2, app_id: 'a1', time_zone: 'UTC' }),
        set({ org_id: 1, app_id: 'a1', time_zone: 'Mars/Olympus' }),
      ],
      new Set(),
    )
    expect(applied.map((a) => a.result.status)).toEqual([404, 400])
    expect(applied.flatMap((a) => a.writes.app_settings)).toEqual([])
  })

  it('says which apps to read', () => {
    expect(
      stateNeeds([set({ org_id: 1, app_id: 'x' }), set({ org_id: 1, app_id: 'x' })]).appSettings,
    ).toEqual(['x'])
  })
})
