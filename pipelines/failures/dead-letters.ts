import type { BusRecord } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { wellFormed } from './classify-error.ts'

/** A record a stage gave up on, with why. */
export interface DeadLetter {
  stage: string
  record: BusRecord
  /** The error and its causes, as one line (see describeFailure). */
  error: string
  attempts: number
  deadAt: number
}

/** Where the guard keeps dead letters. */
export interface DeadLetterSink {
  add(letters: readonly DeadLetter[]): Promise<void>
}

/** A stored dead letter as the admin API shows it. */
export interface StoredDeadLetter {
  id: string
  stage: string
  topic: string
  partition: number
  offset: string
  key: string | null
  headers: Record<string, string>
  error: string
  attempts: number
  produced_at: string
  dead_at: string
  replayed_at: string | null
  value_bytes: number
  /** The record's bytes, base64; in a listing only when at most LIST_VALUE_MAX_BYTES. */
  value: string | null
  /** The first PREVIEW_BYTES bytes as text, when they are printable UTF-8; else null. */
  preview: string | null
}

/** A listing carries values up to this size; larger ones are read one at a time (get()). */
export const LIST_VALUE_MAX_BYTES = 64 * 1024
export const PREVIEW_BYTES = 1024
// Base64 characters that decode to PREVIEW_BYTES bytes (plus one, to see a character cut there).
const PREVIEW_BASE64_CHARS = Math.ceil((PREVIEW_BYTES + 1) / 3) * 4

/** The same record dead-lettered by the same stage always has the same id. */
export function deadLetterId(stage: string, record: Pick<BusRecord, 'topic' | 'partition' | 'offset'>) {
  return `${stage}:${record.topic}:${record.partition}:${record.offset}`
}

/** A row of `dead_letters` as inserted (times in ms since epoch). */
interface DeadLetterRow {
  id: string
  stage: string
  topic: string
  source_partition: number
  source_offset: string
  has_key: 0 | 1
  key: string
  headers: string
  value: string
  value_bytes: number
  error: string
  attempts: number
  produced_at: number
  dead_at: number
  replayed_at?: number
}

/** A row as read back (see SELECTED): 64-bit integers may come back as strings. */
interface SelectedRow {
  id: string
  stage: string
  topic: string
  source_partition: number | string
  offset_text: string
  has_key: number | string
  key: string
  headers: string
  value_bytes: number | string
  error: string
  attempts: number | string
  produced_ms: number | string
  dead_ms: number | string
  replayed_ms: number | string
  value_b64: string
  preview_b64: string
}

/** The row a dead letter is stored as: every string valid UTF-8, the value as base64. */
export function toRow(letter: DeadLetter): DeadLetterRow {
  const { record } = letter
  return {
    id: deadLetterId(letter.stage, record),
    stage: letter.stage,
    topic: record.topic,
    source_partition: record.partition,
    source_offset: record.offset,
    has_key: record.key === null ? 0 : 1,
    key: wellFormed(record.key ?? ''),
    // JSON.stringify escapes a lone surrogate, which the engine refuses: replace it first.
    headers: JSON.stringify(
      Object.fromEntries(Object.entries(record.headers).map(([k, v]) => [wellFormed(k), wellFormed(v)])),
    ),
    value: record.value.toString('base64'),
    value_bytes: record.value.length,
    error: wellFormed(letter.error),
    attempts: letter.attempts,
    produced_at: Math.max(0, Math.floor(record.timestamp)),
    dead_at: letter.deadAt,
  }
}

/** Text of the first bytes of a value, if a person can read it (UTF-8 without control characters). */
export function previewOf(bytes: Buffer, totalBytes: number): string | null {
  const head = bytes.subarray(0, PREVIEW_BYTES)
  let text = head.toString('utf8')
  // A multi-byte character cut by the preview's end decodes as U+FFFD: drop it, it is not garbage.
  if (totalBytes > head.length) text = text.replace(/\uFFFD{1,3}$/, '')
  return isPrintable(text) ? text : null
}

function isPrintable(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    // Tab, line feed and carriage return are text; other C0 controls, DEL and U+FFFD are not.
    if ((c < 0x20 && c !== 0x09 && c !== 0x0a && c !== 0x0d) || c === 0x7f || c === 0xfffd) return false
  }
  return true
}

/** The dead-letter store over the `dead_letters` table (migration 008). */
export class DeadLetterStore implements DeadLetterSink {
  constructor(private readonly store: Store) {}

  async add(letters: readonly DeadLetter[]): Promise<void> {
    if (letters.length === 0) return
    await this.store.insert('dead_letters', letters.map(toRow))
  }

  /** Newest first; values up to LIST_VALUE_MAX_BYTES, larger ones as null (get() has them). */
  async list(options: { stage?: string; limit: number }): Promise<StoredDeadLetter[]> {
    const rows = await this.store.query<SelectedRow>(
      `SELECT ${SELECTED}, if(value_bytes <= {max:UInt64}, value, '') AS value_b64
       FROM dead_letters FINAL
       WHERE {stage:String} = '' OR stage = {stage:String}
       ORDER BY dead_at DESC, id
       LIMIT {limit:UInt32}`,
      {
        stage: options.stage ?? '',
        limit: options.limit,
        max: LIST_VALUE_MAX_BYTES,
        previewChars: PREVIEW_BASE64_CHARS,
      },
    )
    return rows.map(fromRow)
  }

  async get(id: string): Promise<StoredDeadLetter | undefined> {
    const rows = await this.store.query<SelectedRow>(
      `SELECT ${SELECTED}, value AS value_b64 FROM dead_letters FINAL WHERE id = {id:String} LIMIT 1`,
      { id, previewChars: PREVIEW_BASE64_CHARS },
    )
    const row = rows[0]
    return row ? fromRow(row) : undefined
  }

  /** Records that the letter was replayed at `at` (a newer version of its row). */
  async markReplayed(letter: StoredDeadLetter, at: number): Promise<void> {
    if (letter.value === null) throw new Error(`dead letter ${letter.id} was read without its value`)
    const row: DeadLetterRow = {
      id: letter.id,
      stage: letter.stage,
      topic: letter.topic,
      source_partition: letter.partition,
      source_offset: letter.offset,
      has_key: letter.key === null ? 0 : 1,
      key: letter.key ?? '',
      headers: JSON.stringify(letter.headers),
      value: letter.value,
      value_bytes: letter.value_bytes,
      error: letter.error,
      attempts: letter.attempts,
      produced_at: Date.parse(letter.produced_at),
      dead_at: Date.parse(letter.dead_at),
      replayed_at: at,
    }
    await this.store.insert('dead_letters', [row])
  }
}

// Aliases differ from column names: an alias named like a column would shadow it in WHERE/ORDER BY.
const SELECTED = `id, stage, topic, source_partition, toString(source_offset) AS offset_text,
  has_key, key, headers, value_bytes, error, attempts,
  toUnixTimestamp64Milli(produced_at) AS produced_ms, toUnixTimestamp64Milli(dead_at) AS dead_ms,
  toUnixTimestamp64Milli(replayed_at) AS replayed_ms,
  substring(value, 1, {previewChars:UInt64}) AS preview_b64`

function fromRow(row: SelectedRow): StoredDeadLetter {
  const valueBytes = Number(row.value_bytes)
  const value = row.value_b64 === '' && valueBytes > 0 ? null : row.value_b64
  const replayedAt = Number(row.replayed_ms)
  return {
    id: row.id,
    stage: row.stage,
    topic: row.topic,
    partition: Number(row.source_partition),
    offset: row.offset_text,
    key: Number(row.has_key) === 1 ? row.key : null,
    headers: JSON.parse(row.headers) as Record<string, string>,
    error: row.error,
    attempts: Number(row.attempts),
    produced_at: new Date(Number(row.produced_ms)).toISOString(),
    dead_at: new Date(Number(row.dead_ms)).toISOString(),
    replayed_at: replayedAt > 0 ? new Date(replayedAt).toISOString() : null,
    value_bytes: valueBytes,
    value,
    preview: previewOf(Buffer.from(row.preview_b64, 'base64'), valueBytes),
  }
}
