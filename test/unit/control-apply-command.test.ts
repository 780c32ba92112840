import { describe, expect, it } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { ControlUnavailableError, ResultWaiter } from '../../services/control/command-client.ts'
import { commandDecoder, encodeCommand } from '../../pipelines/control/commands.ts'
import { ControlStoreError } from '../../pipelines/control/control-applier.ts'
import { dueJobCommand, periodStart } from '../../pipelines/control/jobs.ts'
import { classifyFailure } from '../../pipelines/failures/classify-error.ts'
import { PermanentError } from '../../pipelines/failures/outcome.ts'
import { emptyCampaignState } from '../../pipelines/campaigns/campaign-commands.ts'
import { manualClock } from '../helpers/manual-clock.ts'
import { emptyExportState } from '../../pipelines/exports/export-commands.ts'
import { controlPlane, type KeyRow } from '../../pipelines/control/apply-command.ts'
import { audienceArea } from '../../pipelines/audiences/audience-control-area.ts'
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
const HASH = 'a'.repeat(64)

let n = 0
const cmd = <K extends CommandKind>(kind: K, payload: CommandPayload<K>, at = AT) =>
  newCommand(kind, payload, at, `c${++n}`)

const empty = (over: Partial<ControlState> = {}): ControlState => ({
  maxIds: { orgs: 0, profile_dbs: 0 },
  orgs: new Set(),
  apps: new Map(),
  keys: new Map(),
  audiences: { maxId: 0, rows: new Map() },
  campaigns: emptyCampaignState(),
  pushTransports: new Map(),
  exports: emptyExportState(),
  ...over,
})

const key = (over: Partial<KeyRow> = {}): KeyRow => ({
  api_key: 'k1',
  org_id: 1,
  secret_hash: HASH,
  scopes: ['events'],
  created_at: AT - 1000,
  revoked: 0,
  revoked_at: null,
  version: AT - 1000,
  ...over,
})

describe('applyCommands (the control applier’s pure core)', () => {
  it('allocates org and profile db ids as max + 1, in command order, with the rows to write', () => {
    const state = empty({ maxIds: { orgs: 7, profile_dbs: 12 } })
    const { applied, state: after } = applyCommands(
      state,
      [cmd('create-org', { name: 'A' }), cmd('create-org', { name: 'B' }, AT + 5)],
      new Set(),
    )
    expect(applied.map((a) => a.result)).toEqual([
      { status: 201, body: { id: 8, name: 'A', profiledb_id: 13 } },
      { status: 201, body: { id: 9, name: 'B', profiledb_id: 14 } },
    ])
    expect(applied[1]!.writes).toEqual({
      profile_dbs: [{ id: 14, org_id: 9, app_id: '', created_at: AT + 5 }],
      orgs: [{ id: 9, name: 'B', profiledb_id: 14, created_at: AT + 5, version: AT + 5 }],
      apps: [],
      api_keys: [],
      audiences: [],
      campaigns: [],
      push_transports: [],
      app_settings: [],
      export_jobs: [],
      export_plans: [],
    })
    expect(after.maxIds).toEqual({ orgs: 9, profile_dbs: 14 })
    // The input state is not changed: applying is pure.
    expect(state.maxIds).toEqual({ orgs: 7, profile_dbs: 12 })
  })

  it('an app id taken, before or earlier in the same batch, is 409; a deleted one can be taken again', () => {
    const state = empty({
      maxIds: { orgs: 1, profile_dbs: 3 },
      orgs: new Set([1]),
      apps: new Map([
        ['old', { deleted: 0, version: AT - 10 }],
        ['gone', { deleted: 1, version: AT + 100 }],
      ]),
    })
    const { applied } = applyCommands(
      state,
      [
        cmd('create-app', { org_id: 1, name: 'x', app_id: 'old' }),
        cmd('create-app', { org_id: 1, name: 'first', app_id: 'new' }),
        cmd('create-app', { org_id: 1, name: 'second', app_id: 'new' }),
        cmd('create-app', { org_id: 1, name: 'again', app_id: 'gone' }),
      ],
      new Set(),
    )
    expect(applied.map((a) => a.result)).toEqual([
      { status: 409, body: { error: 'app_id old already exists' } },
      { status: 201, body: { app_id: 'new', org_id: 1, name: 'first', profiledb_id: 4 } },
      { status: 409, body: { error: 'app_id new already exists' } },
      { status: 201, body: { app_id: 'gone', org_id: 1, name: 'again', profiledb_id: 5 } },
    ])
    expect(applied[0]!.writes.apps).toEqual([])
    expect(applied[1]!.writes.profile_dbs).toEqual([{ id: 4, org_id: 1, app_id: 'new', created_at: AT }])
    // Above the deleted row's version, although this edge's clock is behind the one that deleted it.
    expect(applied[3]!.writes.apps[0]!.version).toBe(AT + 101)
  })

  it('an app or key of an org that does not exist is 404; one created earlier in the batch exists', () => {
    const { applied } = applyCommands(
      empty(),
      [
        cmd('create-app', { org_id: 1, name: 'x', app_id: 'a' }),
        cmd('create-org', { name: 'O' }),
        cmd('create-app', { org_id: 1, name: 'x', app_id: 'a' }),
        cmd('create-key', { org_id: 2, api_key: 'k', secret_hash: HASH, scopes: ['events'] }),
      ],
      new Set(),
    )
    expect(applied.map((a) => a.result.status)).toEqual([404, 201, 201, 404])
    expect(applied[0]!.result.body).toEqual({ error: 'org 1 not found' })
  })

  it('creates a key from the hash the edge sent (never a secret), scopes once each', () => {
    const { applied } = applyCommands(
      empty({ orgs: new Set([3]) }),
      [
        cmd('create-key', {
          org_id: 3,
          api_key: 'k9',
          secret_hash: HASH,
          scopes: ['events', 'push', 'events'],
        }),
      ],
      new Set(),
    )
    expect(applied[0]!.result).toEqual({ status: 201, body: { api_key: 'k9', scopes: ['events', 'push'] } })
    expect(applied[0]!.writes.api_keys).toEqual([
      {
        api_key: 'k9',
        org_id: 3,
        secret_hash: HASH,
        scopes: ['events', 'push'],
        created_at: AT,
        revoked: 0,
        revoked_at: null,
        version: AT,
      },
    ])
  })

  it('revokes in command order: the second revoke of a key, or one naming another org, is 404', () => {
    const state = empty({ orgs: new Set([1]), keys: new Map([['k1', key({ version: AT + 50 })]]) })
    const { applied, state: after } = applyCommands(
      state,
      [
        cmd('revoke-key', { org_id: 2, api_key: 'k1' }),
        cmd('revoke-key', { org_id: 1, api_key: 'k1' }),
        cmd('revoke-key', { org_id: 1, api_key: 'k1' }),
        cmd('revoke-key', { org_id: 1, api_key: 'nope' }),
      ],
      new Set(),
    )
    expect(applied.map((a) => a.result)).toEqual([
      { status: 404, body: { error: 'api key not found' } },
      { status: 204, body: null },
      { status: 404, body: { error: 'api key not found' } },
      { status: 404, body: { error: 'api key not found' } },
    ])
    // The revoked row keeps what the key was; its version passes the stored one (a lagging clock).
    expect(applied[1]!.writes.api_keys).toEqual([key({ revoked: 1, revoked_at: AT, version: AT + 51 })])
    expect(after.keys.get('k1')?.revoked).toBe(1)
  })

  it('applies a command id once however often it appears; a due job of a known job is to be run', () => {
    const twice = newCommand('run-job', { job: 'heartbeat', period_start: 60_000 }, AT, 'heartbeat:60000')
    const again = newCommand('run-job', { job: 'heartbeat', period_start: 60_000 }, AT + 3, 'heartbeat:60000')
    const unknown = newCommand('run-job', { job: 'nope', period_start: 0 }, AT, 'nope:0')
    const { applied } = applyCommands(empty(), [twice, again, unknown], new Set(['heartbeat']))
    expect(applied.map((a) => [a.command.id, a.result.status, a.job])).toEqual([
      ['heartbeat:60000', 200, { name: 'heartbeat', periodStart: 60_000 }],
      ['nope:0', 404, undefined],
    ])
  })

  it('says what state to read: the orgs, app ids and keys the commands name', () => {
    expect(
      stateNeeds([
        cmd('create-org', { name: 'x' }),
        cmd('create-app', { org_id: 4, name: 'x', app_id: 'a' }),
        cmd('create-key', { org_id: 4, api_key: 'k', secret_hash: HASH, scopes: ['push'] }),
        cmd('revoke-key', { org_id: 5, api_key: 'k2' }),
      ]),
    ).toEqual({
      orgIds: [4, 5],
      appIds: ['a'],
      apiKeys: ['k', 'k2'],
      audiences: [],
      campaigns: { any: false, ids: [] },
      pushTransports: [],
      appSettings: [],
      exports: { orgIds: [], profileDbIds: [], appIds: [], audienceIds: [] },
    })
  })
})

describe('areas registered with the control plane', () => {
  it("routes an area's kinds to it, decodes only registered kinds, and refuses a kind registered twice", () => {
    const audience = newCommand(
      'create-audience',
      { org_id: 1, app_id: 'a', name: 'x', target_rules: {}, target_rules_given: {} },
      AT,
    )
    const bare = controlPlane([])
    // Without the audience area, its kinds are not control commands at all.
    expect(commandDecoder(bare.payloads)(encodeCommand(audience))).toMatchObject({ ok: false })
    expect(bare.tables).toEqual(['profile_dbs', 'orgs', 'apps', 'api_keys'])
    const withAudiences = controlPlane([audienceArea])
    expect(commandDecoder(withAudiences.payloads)(encodeCommand(audience))).toEqual({
      ok: true,
      command: audience,
    })
    const { applied, state } = withAudiences.applyCommands(empty(), [audience], new Set())
    expect(applied[0]!.result.status).toBe(201)
    expect(applied[0]!.writes.audiences).toMatchObject([{ id: 1, org_id: 1, app_id: 'a', name: 'x' }])
    expect(state.audiences.maxId).toBe(1)
    expect(() => controlPlane([audienceArea, { ...audienceArea, name: 'again' }])).toThrow(
      /create-audience is registered twice/,
    )
  })
})

describe('control commands on the wire', () => {
  it('round-trip through encode/decode onto partition 0', () => {
    const command = cmd('create-app', { org_id: 1, name: 'n', app_id: 'a' })
    const message = encodeCommand(command)
    expect(message.partition).toBe(0)
    expect(decodeCommand(message)).toEqual({ ok: true, command })
  })

  it('refuse what edges never write, saying why', () => {
    const bad = (value: unknown) => decodeCommand({ value: Buffer.from(JSON.stringify(value)) })
    expect(decodeCommand({ value: Buffer.from('{nope') })).toEqual({
      ok: false,
      reason: 'control command is not JSON',
    })
    expect(bad({ v: 2, id: 'x', kind: 'create-org', at: 1, payload: { name: 'a' } }).ok).toBe(false)
    expect(bad({ v: 1, id: 'x', kind: 'drop-all', at: 1, payload: {} }).ok).toBe(false)
    const noOrg = bad({ v: 1, id: 'x', kind: 'create-app', at: 1, payload: { name: 'a', app_id: 'b' } })
    expect(noOrg).toMatchObject({ ok: false, reason: expect.stringMatching(/create-app payload: org_id/) })
    // A secret in clear is no hash.
    const clear = bad({
      v: 1,
      id: 'x',
      kind: 'create-key',
      at: 1,
      payload: { org_id: 1, api_key: 'k', secret_hash: 'my-secret', scopes: ['push'] },
    })
    expect(clear.ok).toBe(false)
  })

  it('make strings well formed (a lone surrogate becomes U+FFFD)', () => {
    const text = '{"v":1,"id":"x","kind":"create-org","at":1,"payload":{"name":"a\\ud800"}}'
    const decoded = decodeCommand({ value: Buffer.from(text) })
    expect(decoded.ok && decoded.command.payload).toEqual({ name: 'a\ufffd' })
  })
})

describe('failures of the applier’s own reads and writes', () => {
  it('are outages for the failure guard, whatever the cause: a journaled command is never skipped', () => {
    const parseError = Object.assign(new Error('Code: 27. Cannot parse input'), { code: '27' })
    for (const cause of [new PermanentError('bad'), parseError, new Error('something')]) {
      const error = new ControlStoreError(cause)
      expect(classifyFailure(error)).toBe('outage')
      expect(error.message).toContain('control applier could not read or write the store')
    }
  })
})

describe('due jobs', () => {
  it('every scheduler names a period by its aligned start, so they emit the same command id', () => {
    const job = { name: 'sweep', intervalMs: 60_000 }
    expect(periodStart(125_000, 60_000)).toBe(120_000)
    const a = dueJobCommand(job, 120_000)
    const b = dueJobCommand(job, 179_999)
    expect(a.id).toBe('sweep:120000')
    expect(b.id).toBe(a.id)
    expect(b.payload).toEqual({ job: 'sweep', period_start: 120_000 })
    expect(dueJobCommand(job, 180_000).id).toBe('sweep:180000')
  })
})

describe('ResultWaiter', () => {
  /** Answers the applied-results query from a map the test fills; counts queries and ids asked. */
  function resultsStore(answers: Map<string, { status: number; body: string }>) {
    const asked: string[][] = []
    const store = {
      query: async (_sql: string, params: { ids: string }) => {
        const ids = params.ids.split('\n')
        asked.push(ids)
        return ids.flatMap((id) => {
          const a = answers.get(id)
          return a ? [{ command_id: id, ...a }] : []
        })
      },
    } as unknown as Store
    return { store, asked }
  }

  it('waits for many commands with one query per round, and answers each with its result', async () => {
    const answers = new Map<string, { status: number; body: string }>()
    const { store, asked } = resultsStore(answers)
    const clock = manualClock(AT, () => {
      // The applier catches up while the waiter sleeps: one answer per round.
      if (asked.length === 1) answers.set('a', { status: 201, body: '{"id":1}' })
      if (asked.length === 2) answers.set('b', { status: 409, body: '{"error":"taken"}' })
    })
    const waiter = new ResultWaiter(store, clock)
    const [a, b] = await Promise.all([waiter.wait('a', 10_000), waiter.wait('b', 10_000)])
    expect(a).toEqual({ status: 201, body: { id: 1 } })
    expect(b).toEqual({ status: 409, body: { error: 'taken' } })
    expect(asked).toEqual([['a', 'b'], ['a', 'b'], ['b']])
  })

  it('gives up at the deadline with ControlUnavailableError, backing off to 50 ms between rounds', async () => {
    const { store } = resultsStore(new Map())
    const clock = manualClock(AT)
    const waiter = new ResultWaiter(store, clock)
    await expect(waiter.wait('never', 1000)).rejects.toBeInstanceOf(ControlUnavailableError)
    expect(clock.now()).toBeGreaterThanOrEqual(AT + 1000)
    expect(clock.slept.slice(0, 5)).toEqual([5, 10, 20, 40, 50])
    expect(Math.max(...clock.slept)).toBe(50)
  })

  it('keeps waiting through a failing store until the deadline, and names the failure then', async () => {
    const store = { query: () => Promise.reject(new Error('store down')) } as unknown as Store
    const waiter = new ResultWaiter(store, manualClock(AT))
    const error = await waiter.wait('x', 200).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(ControlUnavailableError)
    expect((error as Error).cause).toEqual(new Error('store down'))
  })
})
