import { isUtf8 } from 'node:buffer'
import { Readable, Transform, type TransformCallback } from 'node:stream'
import { createGunzip } from 'node:zlib'
import { parse } from 'csv-parse'
import type { ImportCompression, ImportFormat } from '../../schemas/imports.ts'

/**
 * An import body, streamed as rows (never whole in memory): gzip inflated as it is read, then
 * CSV records (csv-parse) or JSON lines. Every row carries its 1-based line number (a CSV record
 * spanning lines, by a quoted line break, carries the line it ends on). A line that is not UTF-8
 * is a row of its own kind, `bad`, as is a CSV record that does not parse; the rows around it are
 * unaffected. Blank lines are skipped (and counted as lines).
 */
export type SourceRow =
  | { kind: 'cells'; line: number; cells: string[] }
  /** A CSV line without a quote, valid UTF-8: its cells are its text split at commas (readPlainRows). */
  | { kind: 'plain'; line: number; bytes: Buffer }
  | { kind: 'text'; line: number; text: string }
  | { kind: 'bad'; line: number; reason: string }

export const NOT_UTF8 = 'the line is not valid UTF-8'

export function inflated(body: Readable, compression: ImportCompression): Readable {
  if (compression === 'none') return body
  const gunzip = createGunzip()
  body.on('error', (err) => gunzip.destroy(err))
  return body.pipe(gunzip)
}

/** Rows as the CSV parser or the JSON lines reader gives them (no `plain` rows). */
export type ParsedRow = Exclude<SourceRow, { kind: 'plain' }>

export async function* readRows(
  body: Readable,
  format: ImportFormat,
  compression: ImportCompression,
): AsyncGenerator<ParsedRow> {
  const source = inflated(body, compression)
  if (format === 'jsonl') yield* jsonLines(source)
  else yield* csvRecords(source)
}

/**
 * As readRows, but a CSV line without a quote comes as a `plain` row, its bytes as read (valid
 * only until the next row is asked for: the reader copies what it keeps), so the caller need not
 * split it; from the first line holding a quote on, records come from the CSV parser as `cells`.
 */
export async function* readPlainRows(
  body: Readable,
  format: ImportFormat,
  compression: ImportCompression,
): AsyncGenerator<SourceRow> {
  const source = inflated(body, compression)
  if (format === 'jsonl') yield* jsonLines(source)
  else yield* plainCsvLines(source)
}

const BOM = Buffer.from([0xef, 0xbb, 0xbf])

/**
 * CSV split at line breaks while no line holds a quote (such a line is a record of its own, its
 * cells its text split at commas: what csv-parse makes of it), then csv-parse from the first line
 * that holds one, numbering on. Checks UTF-8 a chunk of lines at a time, line by line only in a
 * chunk that fails.
 */
async function* plainCsvLines(source: Readable): AsyncGenerator<SourceRow> {
  const chunks = (source as AsyncIterable<Buffer>)[Symbol.asyncIterator]()
  let line = 0
  let rest: Buffer | undefined
  let first = true
  for (;;) {
    const next = await chunks.next()
    if (next.done) break
    let chunk = rest ? Buffer.concat([rest, next.value]) : next.value
    rest = undefined
    if (first) {
      if (chunk.length < BOM.length && BOM.subarray(0, chunk.length).equals(chunk)) {
        rest = chunk
        continue
      }
      if (chunk.subarray(0, BOM.length).equals(BOM)) chunk = chunk.subarray(BOM.length)
      first = false
    }
    const lastBreak = chunk.lastIndexOf(0x0a)
    const whole = lastBreak >= 0 && isUtf8(chunk.subarray(0, lastBreak))
    const quoteAt = chunk.indexOf(0x22)
    let start = 0
    let nl = lastBreak >= 0 ? chunk.indexOf(0x0a) : -1
    while (nl >= 0) {
      if (quoteAt >= 0 && quoteAt < nl) {
        yield* csvRecords(continued(chunk.subarray(start), chunks), line)
        return
      }
      line++
      let end = nl
      if (end > start && chunk[end - 1] === 0x0d) end--
      if (end > start) {
        const bytes = chunk.subarray(start, end)
        yield whole || isUtf8(bytes)
          ? { kind: 'plain', line, bytes }
          : { kind: 'bad', line, reason: NOT_UTF8 }
      }
      start = nl + 1
      nl = chunk.indexOf(0x0a, start)
    }
    if (start < chunk.length) rest = chunk.subarray(start)
  }
  if (!rest || rest.length === 0) return
  if (rest.includes(0x22)) {
    yield* csvRecords(continued(rest, chunks), line)
    return
  }
  line++
  let end = rest.length
  if (rest[end - 1] === 0x0d) end--
  if (end === 0) return
  const bytes = rest.subarray(0, end)
  yield isUtf8(bytes) ? { kind: 'plain', line, bytes } : { kind: 'bad', line, reason: NOT_UTF8 }
}

/** The bytes from `head` on: `head`, then the chunks not read yet. */
function continued(head: Buffer, chunks: AsyncIterator<Buffer>): Readable {
  return Readable.from(
    (async function* () {
      yield head
      for (;;) {
        const next = await chunks.next()
        if (next.done) return
        yield next.value
      }
    })(),
    { objectMode: false },
  )
}

async function* jsonLines(source: Readable): AsyncGenerator<ParsedRow> {
  let line = 0
  let rest: Buffer | undefined
  const emit = (bytes: Buffer): ParsedRow | undefined => {
    line++
    let end = bytes.length
    if (end > 0 && bytes[end - 1] === 0x0d) end--
    const piece = bytes.subarray(0, end)
    if (!isUtf8(piece)) return { kind: 'bad', line, reason: NOT_UTF8 }
    const text = piece.toString('utf8')
    if (text.trim() === '') return undefined
    return { kind: 'text', line, text }
  }
  for await (const chunk of source as AsyncIterable<Buffer>) {
    let start = 0
    let nl = chunk.indexOf(0x0a)
    while (nl >= 0) {
      const piece = rest ? Buffer.concat([rest, chunk.subarray(start, nl)]) : chunk.subarray(start, nl)
      rest = undefined
      const row = emit(piece)
      if (row) yield row
      start = nl + 1
      nl = chunk.indexOf(0x0a, start)
    }
    if (start < chunk.length)
      rest = rest ? Buffer.concat([rest, chunk.subarray(start)]) : chunk.subarray(start)
  }
  if (rest && rest.length > 0) {
    const row = emit(rest)
    if (row) yield row
  }
}

/**
 * Passes the bytes on unchanged and notes which lines are not UTF-8, so the CSV record spanning
 * such a line is rejected (csv-parse would decode it with replacement characters).
 */
class LineMarker extends Transform {
  /** Line numbers (1-based) of lines that are not UTF-8, in order; the reader takes them. */
  readonly invalid: number[] = []
  private line = 1
  private pending: Buffer[] = []

  override _transform(chunk: Buffer, _enc: BufferEncoding, done: TransformCallback): void {
    let start = 0
    let nl = chunk.indexOf(0x0a)
    while (nl >= 0) {
      this.check(chunk.subarray(start, nl))
      start = nl + 1
      nl = chunk.indexOf(0x0a, start)
    }
    if (start < chunk.length) this.pending.push(chunk.subarray(start))
    done(null, chunk)
  }

  override _flush(done: TransformCallback): void {
    if (this.pending.length > 0) this.check(Buffer.alloc(0))
    done()
  }

  private check(tail: Buffer): void {
    const bytes = this.pending.length > 0 ? Buffer.concat([...this.pending, tail]) : tail
    this.pending = []
    if (!isUtf8(bytes)) this.invalid.push(this.line)
    this.line++
  }
}

interface CsvRecordInfo {
  record: string[]
  info: { lines: number }
}

/** `linesBefore`: lines of the body before `source` (its rows are numbered after them). */
async function* csvRecords(source: Readable, linesBefore = 0): AsyncGenerator<ParsedRow> {
  const marker = new LineMarker()
  const parser = parse({
    bom: linesBefore === 0,
    info: true,
    relax_column_count: true,
    relax_quotes: true,
    record_delimiter: ['\r\n', '\n'],
    skip_empty_lines: true,
    skip_records_with_error: true,
  })
  const skipped: ParsedRow[] = []
  parser.on('skip', (err: Error & { lines?: number }) =>
    skipped.push({ kind: 'bad', line: linesBefore + (err.lines ?? 0), reason: `CSV: ${err.message}` }),
  )
  source.on('error', (err) => parser.destroy(err))
  marker.on('error', (err) => parser.destroy(err))
  source.pipe(marker).pipe(parser)
  let previousEnd = linesBefore
  for await (const item of parser as AsyncIterable<CsvRecordInfo>) {
    const end = linesBefore + item.info.lines
    // The parser runs ahead of this reader: its skips are yielded in line order with the records.
    while (skipped.length > 0 && skipped[0]!.line < end) yield skipped.shift()!
    let bad = false
    while (marker.invalid.length > 0 && linesBefore + marker.invalid[0]! <= end) {
      if (linesBefore + marker.invalid.shift()! > previousEnd) bad = true
    }
    previousEnd = end
    yield bad
      ? { kind: 'bad', line: end, reason: NOT_UTF8 }
      : { kind: 'cells', line: end, cells: item.record }
  }
  while (skipped.length > 0) yield skipped.shift()!
}
