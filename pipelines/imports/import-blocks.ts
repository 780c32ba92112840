import { isChangeOp, type ProfileValueType, type WireValue } from '../../schemas/profiles.ts'
import type { BusRecord, ProduceMessage } from '../connectors/bus/bus.ts'
import type { NormalizedChange } from '../profiles/validate-changes.ts'

/**
 * A block of a profile import on the profile-changes topic: rows of customers that all belong to
 * one partition, so the profile writer that owns those customers applies them in order with the
 * live PATCHes of the same customers (one writer per customer: no lost update). Marked by a
 * header, so the writer tells blocks from PATCH records without parsing them twice.
 */
export const IMPORT_BLOCK_HEADER = 'sluice-import-block'

export interface ImportBlockRow {
  line: number
  customer: string
  changes: NormalizedChange[]
}

export interface ImportBlock {
  v: 1
  import: string
  round: number
  block: number
  org: number
  db: number
  app: string
  /** When the edge accepted the import: the change log's time of every row. */
  receivedAt: number
  /**
   * Rows staged in `import_rows` under (import, round, block), that many: the block carries none
   * of them and the writer applies them in the engine. Absent: the rows are in `rows`.
   */
  staged?: number
  rows: ImportBlockRow[]
}

/** The columns of a staged row, in the order stagedRow writes them (JSONCompactEachRow). */
export const STAGED_ROW_COLUMNS = [
  'import_id',
  'round',
  'block',
  'line',
  'customer_id',
  'updates',
  'update_types',
  'deletes',
  'email',
] as const

/**
 * A row as `import_rows` holds it, one JSONCompactEachRow line; undefined for a row the engine
 * cannot apply by itself: one that increments or changes a set (the result depends on the state
 * it meets), or names an attribute twice (its changes apply in order). Those travel in a block.
 */
export function stagedRow(
  at: { import: string; round: number; block: number },
  row: ImportBlockRow,
): string | undefined {
  const updates: Record<string, WireValue> = {}
  const types: Record<string, ProfileValueType> = {}
  const deletes: string[] = []
  const named = new Set<string>()
  let email = ''
  for (const change of row.changes) {
    if (named.has(change.attr)) return undefined
    named.add(change.attr)
    if (change.op === 'delete') deletes.push(change.attr)
    else if (change.op === 'assign') {
      updates[change.attr] = change.value.value
      types[change.attr] = change.value.type
      if (change.attr === '$email' && change.value.type === 'string') email = change.value.value.toLowerCase()
    } else return undefined
  }
  return JSON.stringify([
    at.import,
    at.round,
    at.block,
    row.line,
    row.customer,
    JSON.stringify(updates),
    types,
    deletes,
    email,
  ])
}

/** Builds a block's bytes from rows already serialised (the processor measures them as it goes). */
export function encodeImportBlock(
  head: Omit<ImportBlock, 'rows' | 'v'>,
  serialisedRows: readonly string[],
  partition: number,
): ProduceMessage {
  const value = `${JSON.stringify({ v: 1, ...head }).slice(0, -1)},"rows":[${serialisedRows.join(',')}]}`
  return {
    partition,
    value: Buffer.from(value),
    headers: { [IMPORT_BLOCK_HEADER]: `${head.import}:${head.round}:${head.block}` },
  }
}

export const serialiseRow = (row: ImportBlockRow): string => JSON.stringify(row)

export const isImportBlock = (record: BusRecord): boolean => record.headers[IMPORT_BLOCK_HEADER] !== undefined

export function decodeImportBlock(
  record: BusRecord,
): { ok: true; block: ImportBlock } | { ok: false; reason: string } {
  let value: unknown
  try {
    value = JSON.parse(record.value.toString('utf8'))
  } catch {
    return { ok: false, reason: 'import block is not JSON' }
  }
  const b = value as Partial<ImportBlock> | null
  if (
    !b ||
    b.v !== 1 ||
    typeof b.import !== 'string' ||
    !Number.isSafeInteger(b.round) ||
    !Number.isSafeInteger(b.block) ||
    !Number.isSafeInteger(b.org) ||
    !Number.isSafeInteger(b.db) ||
    typeof b.app !== 'string' ||
    typeof b.receivedAt !== 'number' ||
    !Array.isArray(b.rows) ||
    (b.staged !== undefined && !Number.isSafeInteger(b.staged))
  )
    return { ok: false, reason: 'record is not an import block' }
  for (const row of b.rows as unknown[]) {
    const r = row as Partial<ImportBlockRow> | null
    if (!r || typeof r.customer !== 'string' || r.customer === '' || !Array.isArray(r.changes))
      return { ok: false, reason: 'import block holds a malformed row' }
    for (const ch of r.changes as unknown[]) {
      const c = ch as Record<string, unknown> | null
      if (!c || !isChangeOp(c.op) || typeof c.attr !== 'string')
        return { ok: false, reason: 'import block holds a malformed change' }
    }
  }
  return { ok: true, block: b as ImportBlock }
}
