import { isUtf8 } from 'node:buffer'

/** Why a line was refused before it was decoded. */
export type RefusedLine = 'line_too_long' | 'invalid_utf8'

export interface LineHandler {
  /** A non-blank line, decoded, without its `\n` / `\r\n` terminator. */
  line(text: string, lineNumber: number): void
  /**
   * Optional: offered each non-blank line of valid UTF-8 as bytes (`body[start, end)`) before it
   * is decoded; true means it was dealt with, and `line` is not called for it.
   */
  bytes?(body: Buffer, start: number, end: number, lineNumber: number): boolean
  /** A non-blank line that was not decoded: over `maxLineBytes`, or not valid UTF-8. */
  refused(lineNumber: number, why: RefusedLine, byteLength: number): void
}

const LF = 0x0a
const CR = 0x0d
const SPACE = 0x20
const TAB = 0x09

/**
 * Visits the lines of an NDJSON body: `\n` separates lines, a `\r` before it is dropped, lines
 * are numbered from 1 over the whole body, and blank lines (only spaces, tabs, `\r`) are skipped
 * but keep their number. Each line is decoded on its own straight from the buffer, so the body
 * is never copied as a whole. A UTF-8 byte order mark at the start of the body is ignored.
 *
 * Returns the number of non-blank lines (visited plus refused).
 */
export function forEachLine(body: Buffer, handler: LineHandler, maxLineBytes = Infinity): number {
  // One vectorised pass answers for almost every body; only a body that fails it pays for a
  // check per line, which then says which lines are broken.
  const checkEachLine = !isUtf8(body)
  const size = body.length
  let start = size >= 3 && body[0] === 0xef && body[1] === 0xbb && body[2] === 0xbf ? 3 : 0
  let lineNumber = 0
  let nonBlank = 0
  while (start <= size) {
    lineNumber++
    const newline = body.indexOf(LF, start)
    const next = newline < 0 ? size + 1 : newline + 1
    let end = newline < 0 ? size : newline
    if (end > start && body[end - 1] === CR) end--
    let first = start
    while (first < end) {
      const b = body[first]
      if (b !== SPACE && b !== TAB && b !== CR) break
      first++
    }
    if (first < end) {
      nonBlank++
      const bytes = end - start
      if (bytes > maxLineBytes) handler.refused(lineNumber, 'line_too_long', bytes)
      else if (checkEachLine && !isUtf8(body.subarray(start, end)))
        handler.refused(lineNumber, 'invalid_utf8', bytes)
      else if (!handler.bytes?.(body, start, end, lineNumber))
        handler.line(body.toString('utf8', start, end), lineNumber)
    }
    start = next
  }
  return nonBlank
}

/** Byte length of `text` in UTF-8 exceeds `max`; avoids measuring when the answer is obvious. */
export function utf8LongerThan(text: string, max: number): boolean {
  if (text.length * 3 <= max) return false
  if (text.length > max) return true
  return Buffer.byteLength(text, 'utf8') > max
}
