import { isUtf8 } from 'node:buffer'
import { Transform, type Readable, type TransformCallback } from 'node:stream'
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
  | { kind: 'text'; line: number; text: string }
  | { kind: 'bad'; line: number; reason: string }

export const NOT_UTF8 = 'the line is not valid UTF-8'

export function inflated(body: Readable, compression: ImportCompression): Readable {
  if (compression === 'none') return body
  const gunzip = createGunzip()
  body.on('error', (err) => gunzip.destroy(err))
  return body.pipe(gunzip)
}

export async function* readRows(
  body: Readable,
  format: ImportFormat,
  compression: ImportCompression,
): AsyncGenerator<SourceRow> {
  const source = inflated(body, compression)
  if (format === 'jsonl') yield* jsonLines(source)
  else yield* csvRecords(source)
}

async function* jsonLines(source: Readable): AsyncGenerator<SourceRow> {
  let line = 0
  let rest: Buffer | undefined
  const emit = (bytes: Buffer): SourceRow | undefined => {
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

async function* csvRecords(source: Readable): AsyncGenerator<SourceRow> {
  const marker = new LineMarker()
  const parser = parse({
    bom: true,
    info: true,
    relax_column_count: true,
    relax_quotes: true,
    record_delimiter: ['\r\n', '\n'],
    skip_empty_lines: true,
    skip_records_with_error: true,
  })
  const skipped: SourceRow[] = []
  parser.on('skip', (err: Error & { lines?: number }) =>
    skipped.push({ kind: 'bad', line: err.lines ?? 0, reason: `CSV: ${err.message}` }),
  )
  source.on('error', (err) => parser.destroy(err))
  marker.on('error', (err) => parser.destroy(err))
  source.pipe(marker).pipe(parser)
  let previousEnd = 0
  for await (const item of parser as AsyncIterable<CsvRecordInfo>) {
    const end = item.info.lines
    // The parser runs ahead of this reader: its skips are yielded in line order with the records.
    while (skipped.length > 0 && skipped[0]!.line < end) yield skipped.shift()!
    let bad = false
    while (marker.invalid.length > 0 && marker.invalid[0]! <= end) {
      if (marker.invalid.shift()! > previousEnd) bad = true
    }
    previousEnd = end
    yield bad
      ? { kind: 'bad', line: end, reason: NOT_UTF8 }
      : { kind: 'cells', line: end, cells: item.record }
  }
  while (skipped.length > 0) yield skipped.shift()!
}
