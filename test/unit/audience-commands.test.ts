import { describe, expect, it } from 'vitest'
import { encodeCommand } from '../../pipelines/control/commands.ts'
import type { AudienceRow } from '../../pipelines/audiences/audience-commands.ts'
import { emptyExportState } from '../../pipelines/exports/export-commands.ts'
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
  newCommand(kind, payload, at, `a${++n}`)

const RULES = { behavior_profile_operator: 'and', targeting_type: 'install_id' }
const OTHER_RULES = { behavior_profile_operator: 'or', targeting_type: 'install_id' }

const row = (over: Partial<AudienceRow> = {}): AudienceRow => ({
  id: 5,
  org_id: 1,
  app_id: 'app-a',
  name: 'Buyers',
  target_rules: JSON.stringify(RULES),
  target_rules_given: JSON.stringify({ ...RULES, extra: 1 }),
  created_at: AT - 10_000,
  updated_at: AT - 5_000,
  deleted_at: null,
  version: AT - 5_000,
  ...over,
})

const state = (maxId: number, rows: AudienceRow[] = []): ControlState => ({
  maxIds: { orgs: 3, profile_dbs: 9 },
  orgs: new Set([1, 2]),
  apps: new Map(),
  keys: new Map(),
  audiences: { maxId, rows: new Map(rows.map((r) => [r.id, r])) },
  exports: emptyExportState(),
})

const create = (name: string, at = AT, org_id = 1, app_id = 'app-a') =>
  cmd(
    'create-audience',
    { org_id, app_id, name, target_rules: RULES, target_rules_given: { ...RULES, given: true } },
    at,
  )

describe('audience commands (the control applier’s rules)', () => {
  it('allocates ids as max + 1 in command order and writes both forms of the rules', () => {
    const { applied, state: after } = applyCommands(
      state(41),
      [create('A'), create('B', AT + 7, 2, 'app-b')],
      new Set(),
    )
    expect(applied.map((a) => a.result)).toEqual([
      {
        status: 201,
        body: {
          id: 42,
          org_id: 1,
          app_id: 'app-a',
          name: 'A',
          target_rules: RULES,
          target_rules_given: { ...RULES, given: true },
          created_at: AT,
          updated_at: AT,
          version: AT,
        },
      },
      {
        status: 201,
        body: {
          id: 43,
          org_id: 2,
          app_id: 'app-b',
          name: 'B',
          target_rules: RULES,
          target_rules_given: { ...RULES, given: true },
          created_at: AT + 7,
          updated_at: AT + 7,
          version: AT + 7,
        },
      },
    ])
    expect(applied[1]!.writes.audiences).toEqual([
      {
        id: 43,
        org_id: 2,
        app_id: 'app-b',
        name: 'B',
        target_rules: JSON.stringify(RULES),
        target_rules_given: JSON.stringify({ ...RULES, given: true }),
        created_at: AT + 7,
        updated_at: AT + 7,
        deleted_at: null,
        version: AT + 7,
      },
    ])
    expect(after.audiences.maxId).toBe(43)
  })

  it('a PATCH of the name keeps the rules; of the rules keeps the name; versions always grow', () => {
    const existing = row()
    const { applied } = applyCommands(
      state(5, [existing]),
      [
        cmd('update-audience', { org_id: 1, app_id: 'app-a', audience_id: 5, name: 'Renamed' }, AT),
        // Taken by an edge whose clock lags the previous write: the version still grows.
        cmd(
          'update-audience',
          {
            org_id: 1,
            app_id: 'app-a',
            audience_id: 5,
            target_rules: OTHER_RULES,
            target_rules_given: { ...OTHER_RULES, as: 'sent' },
          },
          AT - 60_000,
        ),
      ],
      new Set(),
    )
    expect(applied[0]!.result).toMatchObject({
      status: 200,
      body: {
        id: 5,
        name: 'Renamed',
        target_rules: RULES,
        target_rules_given: { ...RULES, extra: 1 },
        created_at: AT - 10_000,
        updated_at: AT,
      },
    })
    expect(applied[0]!.writes.audiences[0]).toMatchObject({
      name: 'Renamed',
      target_rules: existing.target_rules,
      target_rules_given: existing.target_rules_given,
      version: AT,
    })
    // The second update applies to the result of the first (merged when applied, not when taken).
    expect(applied[1]!.result).toMatchObject({
      status: 200,
      body: {
        id: 5,
        name: 'Renamed',
        target_rules: OTHER_RULES,
        target_rules_given: { ...OTHER_RULES, as: 'sent' },
        updated_at: AT,
        version: AT + 1,
      },
    })
    expect(applied[1]!.writes.audiences[0]).toMatchObject({
      target_rules: JSON.stringify(OTHER_RULES),
      target_rules_given: JSON.stringify({ ...OTHER_RULES, as: 'sent' }),
      version: AT + 1,
      deleted_at: null,
    })
  })

  it('an audience of another org or app, an unknown one and a deleted one are 404, with nothing written', () => {
    const s = state(9, [row(), row({ id: 6, deleted_at: AT - 1 }), row({ id: 7, org_id: 2 })])
    const tries = [
      cmd('update-audience', { org_id: 2, app_id: 'app-a', audience_id: 5, name: 'x' }),
      cmd('update-audience', { org_id: 1, app_id: 'app-b', audience_id: 5, name: 'x' }),
      cmd('delete-audience', { org_id: 1, app_id: 'app-a', audience_id: 6 }),
      cmd('update-audience', { org_id: 1, app_id: 'app-a', audience_id: 6, name: 'x' }),
      cmd('delete-audience', { org_id: 1, app_id: 'app-a', audience_id: 7 }),
      cmd('delete-audience', { org_id: 1, app_id: 'app-a', audience_id: 99 }),
    ]
    const { applied } = applyCommands(s, tries, new Set())
    expect(applied.map((a) => a.result)).toEqual([
      { status: 404, body: { error: 'audience 5 not found' } },
      { status: 404, body: { error: 'audience 5 not found' } },
      { status: 404, body: { error: 'audience 6 not found' } },
      { status: 404, body: { error: 'audience 6 not found' } },
      { status: 404, body: { error: 'audience 7 not found' } },
      { status: 404, body: { error: 'audience 99 not found' } },
    ])
    expect(applied.flatMap((a) => a.writes.audiences)).toEqual([])
  })

  it('a delete is soft: the row stays with deleted_at; later commands of the batch see it gone; ids are not reused', () => {
    const { applied, state: after } = applyCommands(
      state(5, [row()]),
      [
        cmd('delete-audience', { org_id: 1, app_id: 'app-a', audience_id: 5 }, AT),
        cmd('delete-audience', { org_id: 1, app_id: 'app-a', audience_id: 5 }, AT + 1),
        cmd('update-audience', { org_id: 1, app_id: 'app-a', audience_id: 5, name: 'back' }, AT + 2),
        create('Next', AT + 3),
      ],
      new Set(),
    )
    expect(applied.map((a) => a.result.status)).toEqual([204, 404, 404, 201])
    expect(applied[0]!.writes.audiences).toEqual([{ ...row(), deleted_at: AT, version: AT }])
    expect((applied[3]!.result.body as { id: number }).id).toBe(6)
    expect(after.audiences.rows.get(5)?.deleted_at).toBe(AT)
  })

  it('says which audiences to read: those updated or deleted', () => {
    expect(
      stateNeeds([
        create('x'),
        cmd('update-audience', { org_id: 1, app_id: 'a', audience_id: 3, name: 'y' }),
        cmd('delete-audience', { org_id: 1, app_id: 'a', audience_id: 8 }),
        cmd('delete-audience', { org_id: 1, app_id: 'a', audience_id: 3 }),
      ]).audiences,
    ).toEqual([3, 8])
  })

  it('round-trip on the wire; a malformed payload does not decode (dead-lettered, nothing applied)', () => {
    const c = create('On the wire')
    expect(decodeCommand(encodeCommand(c))).toEqual({ ok: true, command: c })
    const bad = (payload: unknown) =>
      decodeCommand({
        value: Buffer.from(JSON.stringify({ v: 1, id: 'x', kind: 'update-audience', at: AT, payload })),
      })
    expect(bad({ org_id: 1, app_id: 'a', audience_id: 0 })).toMatchObject({ ok: false })
    expect(bad({ org_id: 1, app_id: 'a', audience_id: 3, name: '' })).toMatchObject({ ok: false })
    expect(bad({ org_id: 1, app_id: 'a', audience_id: 3, target_rules: [] })).toMatchObject({
      ok: false,
      reason: expect.stringContaining('target_rules') as unknown,
    })
  })
})
