import type { IgnoredChange } from '../../schemas/profiles.ts'
import { stringSet } from '../connectors/store/string-set.ts'
import type { BusRecord, RecordBatch } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { deadLetter, PermanentError, type StageReport } from '../failures/outcome.ts'
import { applyChanges, diffAttributes, type Attributes } from './apply-changes.ts'
import { decodeCommand, type ProfileCommand } from './commands.ts'
import { decodeImportBlock, isImportBlock, type ImportBlock } from '../imports/import-blocks.ts'
import { applyStagedBlocks } from './apply-staged.ts'
import { attributesFromRow, toProfileRow, type ProfileRow } from './stored-profile.ts'

export interface ProfileWriterDeps {
  store: Store
  now?: () => number
  /** A change valid at the edge that the profile's state refused (e.g. increment of a string). */
  onIgnored?: (command: ProfileCommand, ignored: IgnoredChange[], changeId: string) => void
  /**
   * A record that does not decode: skipped, never redelivered forever, and reported as a dead
   * letter in the writer's result, so the guard keeps it in the dead-letter store.
   */
  onUndecodable?: (record: BusRecord, reason: string) => void
  onApplied?: (count: number) => void
}

interface CurrentProfile {
  attributes: Attributes | null
  partition: number
  offset: bigint
  /** The latest receipt time among the requests applied so far. */
  updatedAt: number
  version: number
}

/** One request to apply: a PATCH or DELETE record, or one row of an import block. */
interface Item {
  record: BusRecord
  command: ProfileCommand
  /** The change log's key: the record's position, or the import row's (import id and line). */
  changeId: string
  block?: BlockTally
}

/** What a batch did with one import block: its receipt row in import_blocks. */
interface BlockTally {
  block: ImportBlock
  rows: number
  applied: number
  ignored: number
}

interface ChangeRow {
  profiledb_id: number
  org_id: number
  app_id: string
  customer_id: string
  change_id: string
  at: number
  applied_at: number
  seq: string
  updates: string
  deletes: string[]
  profile_deleted: 0 | 1
  ignored: string
}

/**
 * The profile writer: the single owner of a partition of (profile db, customer) keys. Per batch it
 * reads the current state of the batch's profiles in one query, applies each customer's requests
 * in offset order (pure), then writes the change-log rows and the new profile versions. Staged
 * import blocks (rows in import_rows) are applied in the engine instead (apply-staged.ts), in
 * their place in the batch's order.
 *
 * Idempotent on replay: every profile row records the last bus offset applied to it and the
 * latest receipt time applied, and a record at or below that offset, received no later, was
 * applied already and is skipped, so an increment counts once even when a batch is delivered
 * again after a crash. (The receipt time keeps a bus whose offsets restarted, e.g. a Kafka
 * wiped under a kept ClickHouse, from looking like a replay.) Change-log rows are keyed by the
 * record's position, so writing them again (a crash between the two inserts) replaces rather than
 * duplicates them; they are written first, so a profile version never exists without its
 * change-log rows.
 */
export function profileWriter(deps: ProfileWriterDeps) {
  const now = deps.now ?? Date.now
  return async (batch: RecordBatch): Promise<StageReport> => {
    const report: StageReport = { outcomes: [] }
    // The batch in order, in runs: PATCHes and blocks carrying their rows are applied together
    // (per customer, in order); each run of staged blocks of one import round is applied in the
    // engine between them, so every request meets the state the ones before it left.
    let run: Decoded[] = []
    let stagedRun: StagedItem[] = []
    const flush = async () => {
      if (run.length > 0) await applyRecords(deps, now, run)
      if (stagedRun.length > 0) await applyStaged(deps, now, stagedRun)
      run = []
      stagedRun = []
    }
    for (const record of batch.records) {
      const decoded = decodeRecord(record)
      if (!decoded.ok) {
        deps.onUndecodable?.(record, decoded.reason)
        const message = decoded.command ? `undecodable profile command: ${decoded.reason}` : decoded.reason
        report.outcomes.push({ record, outcome: deadLetter(new PermanentError(message)) })
        continue
      }
      if (decoded.kind === 'block' && decoded.block.staged !== undefined) {
        const first = stagedRun[0]?.block
        if (
          run.length > 0 ||
          (first && (first.import !== decoded.block.import || first.round !== decoded.block.round))
        )
          await flush()
        stagedRun.push({ record, block: decoded.block })
      } else {
        if (stagedRun.length > 0) await flush()
        run.push(decoded)
      }
    }
    await flush()
    return report
  }
}

type Decoded =
  | { ok: true; kind: 'command'; record: BusRecord; command: ProfileCommand }
  | { ok: true; kind: 'block'; record: BusRecord; block: ImportBlock }

interface StagedItem {
  record: BusRecord
  block: ImportBlock
}

function decodeRecord(record: BusRecord): Decoded | { ok: false; reason: string; command: boolean } {
  if (isImportBlock(record)) {
    const decoded = decodeImportBlock(record)
    return decoded.ok
      ? { ok: true, kind: 'block', record, block: decoded.block }
      : { ok: false, reason: decoded.reason, command: false }
  }
  const decoded = decodeCommand(record)
  return decoded.ok
    ? { ok: true, kind: 'command', record, command: decoded.command }
    : { ok: false, reason: decoded.reason, command: true }
}

/** Staged blocks of one import round (one partition): applied in the engine, then marked applied. */
async function applyStaged(deps: ProfileWriterDeps, now: () => number, items: StagedItem[]): Promise<void> {
  const { store } = deps
  const todo = await unappliedBlocks(store, items)
  if (todo.length === 0) return
  const b = todo[0]!.block
  const tallies = await applyStagedBlocks(
    store,
    {
      import: b.import,
      round: b.round,
      db: b.db,
      org: b.org,
      app: b.app,
      receivedAt: b.receivedAt,
      partition: todo[0]!.record.partition,
      blocks: todo.map((t) => ({ block: t.block.block, offset: t.record.offset })),
    },
    now(),
  )
  const byBlock = new Map(tallies.map((t) => [t.block, t]))
  for (const { block } of todo) {
    // The processor stages a round's rows before handing its blocks on; rows not readable yet (a
    // replica behind) are retried with the batch rather than marked applied without them.
    const found = byBlock.get(block.block)?.rows ?? 0
    if (found !== block.staged)
      throw new Error(
        `import ${block.import} round ${block.round} block ${block.block}: ${found} of ${block.staged} staged rows found`,
      )
  }
  await store.insert(
    'import_blocks',
    todo.map(({ block }) => {
      const t = byBlock.get(block.block)!
      return {
        import_id: block.import,
        round: block.round,
        block: block.block,
        rows: t.rows,
        applied: t.applied,
        ignored: t.ignored,
        applied_at: now(),
      }
    }),
  )
  deps.onApplied?.(tallies.reduce((n, t) => n + t.rows, 0))
}

/** PATCHes, DELETEs and blocks carrying their rows: state read in one query, applied per customer. */
async function applyRecords(deps: ProfileWriterDeps, now: () => number, decoded: Decoded[]): Promise<void> {
  const groups = new Map<string, Item[]>()
  const add = (item: Item) => {
    const key = profileKey(item.command.db, item.command.customer)
    const group = groups.get(key) ?? []
    group.push(item)
    groups.set(key, group)
  }
  const blocks: { record: BusRecord; block: ImportBlock }[] = []
  for (const d of decoded) {
    if (d.kind === 'block') blocks.push({ record: d.record, block: d.block })
    else
      add({
        record: d.record,
        command: d.command,
        changeId: `${d.record.topic}:${d.record.partition}:${d.record.offset}`,
      })
  }
  const tallies: BlockTally[] = []
  for (const { record, block } of await unappliedBlocks(deps.store, blocks)) {
    const tally: BlockTally = { block, rows: block.rows.length, applied: 0, ignored: 0 }
    tallies.push(tally)
    for (const row of block.rows)
      add({
        record,
        command: {
          v: 1,
          op: 'patch',
          org: block.org,
          db: block.db,
          app: block.app,
          customer: row.customer,
          receivedAt: block.receivedAt,
          changes: row.changes,
        },
        changeId: `import:${block.import}:${row.line}`,
        block: tally,
      })
  }
  if (groups.size === 0) return

  const commands = [...groups.values()].map((g) => g[0]!.command)
  const current = await loadCurrent(deps.store, commands)
  const appliedAt = now()
  const changeRows: ChangeRow[] = []
  const profileRows: ProfileRow[] = []
  // Profiles absent before and after this batch (a DELETE of one that never existed): a
  // deleted row is written only where it hides an auto-profile, i.e. the SDK has seen them.
  const stillAbsent: { command: ProfileCommand; row: ProfileRow }[] = []
  let applied = 0
  for (const [key, group] of groups) {
    const stored = current.get(key)
    let attributes = stored?.attributes ?? null
    let last: Item | undefined
    let updatedAt = stored?.updatedAt ?? 0
    for (const item of group) {
      const { record, command } = item
      // Already applied before a crash or a rebalance: applying it again would count it twice.
      if (
        stored &&
        stored.partition === record.partition &&
        BigInt(record.offset) <= stored.offset &&
        command.receivedAt <= stored.updatedAt
      ) {
        if (item.block) item.block.applied++
        continue
      }
      updatedAt = Math.max(updatedAt, command.receivedAt)
      const before = attributes
      let ignored: IgnoredChange[] = []
      if (command.op === 'delete-profile') {
        attributes = null
      } else {
        const result = applyChanges(before, command.changes)
        attributes = result.attributes
        ignored = result.ignored
      }
      const changeId = item.changeId
      if (ignored.length > 0) deps.onIgnored?.(command, ignored, changeId)
      const diff = diffAttributes(before, attributes)
      const deletedProfile = command.op === 'delete-profile' && before !== null
      const changed = Object.keys(diff.updates).length > 0 || diff.deletes.length > 0 || deletedProfile
      if (item.block) {
        if (changed) item.block.applied++
        else item.block.ignored++
      }
      if (changed || ignored.length > 0) {
        changeRows.push({
          profiledb_id: command.db,
          org_id: command.org,
          app_id: command.app,
          customer_id: command.customer,
          change_id: changeId,
          at: command.receivedAt,
          applied_at: appliedAt,
          seq: record.offset,
          updates: JSON.stringify(diff.updates),
          deletes: diff.deletes,
          profile_deleted: deletedProfile ? 1 : 0,
          ignored: JSON.stringify(ignored),
        })
      }
      last = item
      applied++
    }
    if (!last) continue
    const row = toProfileRow(
      {
        profiledb_id: last.command.db,
        org_id: last.command.org,
        app_id: last.command.app,
        customer_id: last.command.customer,
        updated_at: updatedAt,
        source_partition: last.record.partition,
        source_offset: last.record.offset,
        // Derived from the state read, so a replay of the same batch writes the same version.
        version: (stored?.version ?? 0) + 1,
      },
      attributes,
    )
    if (attributes === null && (stored?.attributes ?? null) === null)
      stillAbsent.push({ command: last.command, row })
    else profileRows.push(row)
  }
  if (stillAbsent.length > 0) {
    const seen = await seenBySdk(
      deps.store,
      stillAbsent.map((a) => a.command),
    )
    for (const { command, row } of stillAbsent) if (seen(command)) profileRows.push(row)
  }
  if (changeRows.length > 0) await deps.store.insert('profile_changes', changeRows)
  if (profileRows.length > 0) await deps.store.insert('profiles', profileRows)
  // Last: a block is marked applied only once its rows are (a crash before this applies it again,
  // and the offsets the profile rows record make that a no-op for the rows already written).
  if (tallies.length > 0)
    await deps.store.insert(
      'import_blocks',
      tallies.map((t) => ({
        import_id: t.block.import,
        round: t.block.round,
        block: t.block.block,
        rows: t.rows,
        applied: t.applied,
        ignored: t.ignored,
        applied_at: appliedAt,
      })),
    )
  deps.onApplied?.(applied)
}

const profileKey = (db: number, customer: string) => `${db}\n${customer}`

/**
 * The import blocks not applied yet: a block the import processor handed on twice (it crashed
 * between handing it on and noting so) is applied once, by its natural key in import_blocks.
 */
async function unappliedBlocks(
  store: Store,
  blocks: { record: BusRecord; block: ImportBlock }[],
): Promise<{ record: BusRecord; block: ImportBlock }[]> {
  if (blocks.length === 0) return []
  const blockKey = (b: { import: string; round: number | string; block: number | string }) =>
    `${b.import}\n${Number(b.round)}\n${Number(b.block)}`
  const rows = await store.query<{ import: string; round: string; block: number }>(
    `SELECT import_id AS import, round, block FROM import_blocks WHERE import_id IN {ids:Array(String)}`,
    { ids: [...new Set(blocks.map((b) => b.block.import))] },
  )
  const done = new Set(rows.map(blockKey))
  return blocks.filter(({ block }) => {
    const key = blockKey(block)
    if (done.has(key)) return false
    done.add(key)
    return true
  })
}

/**
 * Which of these commands' customers the SDK has seen where their profile reads SDK state (the
 * command's app, or any app of its org for an org-level profile): those have an auto-profile a
 * DELETE must hide; the others never existed, and their DELETE leaves no row.
 */
async function seenBySdk(
  store: Store,
  commands: ProfileCommand[],
): Promise<(command: ProfileCommand) => boolean> {
  const customers = stringSet('customers', [...new Set(commands.map((c) => c.customer))])
  const rows = await store.query<{ app_id: string; customer_id: string; org_id: number | string }>(
    `SELECT DISTINCT d.app_id AS app_id, d.customer_id AS customer_id, a.org_id AS org_id
     FROM customer_devices AS d
     INNER JOIN (SELECT app_id, org_id FROM apps FINAL WHERE deleted = 0) AS a ON d.app_id = a.app_id
     WHERE d.customer_id IN ${customers.sql}`,
    { customers: customers.value },
  )
  const byApp = new Set(rows.map((r) => `${r.app_id}\n${r.customer_id}`))
  const byOrg = new Set(rows.map((r) => `${Number(r.org_id)}\n${r.customer_id}`))
  return (command) =>
    command.app !== ''
      ? byApp.has(`${command.app}\n${command.customer}`)
      : byOrg.has(`${command.org}\n${command.customer}`)
}

async function loadCurrent(store: Store, commands: ProfileCommand[]): Promise<Map<string, CurrentProfile>> {
  const wanted = new Set(commands.map((c) => profileKey(c.db, c.customer)))
  const customers = stringSet('customers', [...new Set(commands.map((c) => c.customer))])
  const rows = await store.query<{
    profiledb_id: number | string
    customer_id: string
    attributes: string
    attribute_types: Record<string, string>
    deleted: number | string
    source_partition: number | string
    source_offset: number | string
    updated_at: number | string
    version: number | string
  }>(
    `SELECT profiledb_id, customer_id, attributes, attribute_types, deleted, source_partition, source_offset,
            toUnixTimestamp64Milli(updated_at) AS updated_at, version
     FROM profiles FINAL
     WHERE profiledb_id IN {dbs:Array(UInt64)} AND customer_id IN ${customers.sql}`,
    { dbs: [...new Set(commands.map((c) => c.db))], customers: customers.value },
  )
  const current = new Map<string, CurrentProfile>()
  for (const row of rows) {
    const key = profileKey(Number(row.profiledb_id), row.customer_id)
    if (!wanted.has(key)) continue
    current.set(key, {
      attributes: Number(row.deleted) === 1 ? null : attributesFromRow(row.attributes, row.attribute_types),
      partition: Number(row.source_partition),
      offset: BigInt(row.source_offset),
      updatedAt: Number(row.updated_at),
      version: Number(row.version),
    })
  }
  return current
}
