import { describe, expect, it } from 'vitest'
import { encodeCommand } from '../../pipelines/control/commands.ts'
import type { PushTransportAppState } from '../../pipelines/push/transport-commands.ts'
import {
  CONTROL,
  type ControlState,
  decodeCommand,
  newCommand,
  type CommandKind,
  type CommandPayload,
} from '../../services/control/control-plane.ts'

const { applyCommands, stateNeeds } = CONTROL

const AT = 1_700_000_000_000
let n = 0
const cmd = <K extends CommandKind>(kind: K, payload: CommandPayload<K>, at = AT) =>
  newCommand(kind, payload, at, `p${++n}`)

const state = (apps: Record<string, PushTransportAppState>): ControlState => ({
  maxIds: { orgs: 0, profile_dbs: 0 },
  orgs: new Set(),
  apps: new Map(),
  keys: new Map(),
  audiences: { maxId: 0, rows: new Map() },
  pushTransports: new Map(Object.entries(apps)),
})

const webhook = {
  url: 'https://h.example/push',
  secret: 'whsec-0123456789abcdef',
  timeout_ms: 10_000,
  batch_size: 100,
}

describe('push transport commands (pure)', () => {
  it('set writes one row per platform with the settings in full, and answers them masked', () => {
    const { applied } = applyCommands(
      state({ app1: { orgId: 1, rows: {} } }),
      [
        cmd('set-push-transport', {
          org_id: 1,
          app_id: 'app1',
          platform: 'all',
          kind: 'webhook',
          settings: webhook,
        }),
      ],
      new Set(),
    )
    const [a] = applied
    expect(a!.writes.push_transports).toEqual(
      ['ios', 'android'].map((platform) => ({
        app_id: 'app1',
        platform,
        org_id: 1,
        kind: 'webhook',
        settings: JSON.stringify(webhook),
        updated_at: AT,
        deleted: 0,
        version: AT,
      })),
    )
    expect(a!.result).toEqual({
      status: 200,
      body: {
        app_id: 'app1',
        transports: ['ios', 'android'].map((platform) => ({
          platform,
          kind: 'webhook',
          settings: { ...webhook, secret: '****cdef' },
          updated_at: new Date(AT).toISOString(),
        })),
      },
    })
    expect(JSON.stringify(a!.result)).not.toContain(webhook.secret)
  })

  it('an app of another org, an unknown app, bad settings or apns on android are refused', () => {
    const { applied } = applyCommands(
      state({ app1: { orgId: 1, rows: {} }, gone: { orgId: undefined, rows: {} } }),
      [
        cmd('set-push-transport', { org_id: 2, app_id: 'app1', platform: 'ios', kind: 'file', settings: {} }),
        cmd('set-push-transport', { org_id: 1, app_id: 'gone', platform: 'ios', kind: 'file', settings: {} }),
        cmd('set-push-transport', {
          org_id: 1,
          app_id: 'app1',
          platform: 'ios',
          kind: 'webhook',
          settings: { url: 'x' },
        }),
        cmd('set-push-transport', {
          org_id: 1,
          app_id: 'app1',
          platform: 'android',
          kind: 'apns',
          settings: {},
        }),
      ],
      new Set(),
    )
    expect(applied.map((a) => a.result.status)).toEqual([404, 404, 400, 400])
    expect(applied[3]!.result.body).toEqual({ error: expect.stringMatching(/^settings\.key: /) })
    expect(applied.every((a) => a.writes.push_transports.length === 0)).toBe(true)
  })

  it('versions rise above the previous row even when the edge clock lags; remove deletes what is set', () => {
    const { applied, state: after } = applyCommands(
      state({ app1: { orgId: 1, rows: { ios: { deleted: 0, version: AT + 500 } } } }),
      [
        cmd(
          'set-push-transport',
          { org_id: 1, app_id: 'app1', platform: 'ios', kind: 'file', settings: {} },
          AT,
        ),
        cmd('remove-push-transport', { org_id: 1, app_id: 'app1', platform: 'all' }, AT + 1),
        cmd('remove-push-transport', { org_id: 1, app_id: 'app1', platform: 'ios' }, AT + 2),
      ],
      new Set(),
    )
    expect(applied[0]!.writes.push_transports[0]!.version).toBe(AT + 501)
    expect(applied[1]!.result).toEqual({ status: 204, body: null })
    expect(applied[1]!.writes.push_transports).toEqual([
      expect.objectContaining({ platform: 'ios', deleted: 1, version: AT + 502 }),
    ])
    expect(applied[2]!.result).toEqual({
      status: 404,
      body: { error: 'no push transport set for ios on app app1' },
    })
    expect(after.pushTransports.get('app1')!.rows).toEqual({ ios: { deleted: 1, version: AT + 502 } })
  })

  it('reads the apps push-transport commands name; the payload round-trips through the topic', () => {
    const set = cmd('set-push-transport', {
      org_id: 1,
      app_id: 'a',
      platform: 'ios',
      kind: 'file',
      settings: {},
    })
    const remove = cmd('remove-push-transport', { org_id: 1, app_id: 'b', platform: 'android' })
    expect(stateNeeds([set, remove, cmd('create-org', { name: 'x' })]).pushTransports).toEqual(['a', 'b'])
    expect(decodeCommand(encodeCommand(set))).toEqual({ ok: true, command: set })
    const bad = { ...remove, payload: { org_id: 1, app_id: 'b', platform: 'windows' } }
    expect(decodeCommand({ value: Buffer.from(JSON.stringify(bad)) })).toMatchObject({ ok: false })
  })
})
