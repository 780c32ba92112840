/**
 * A small ClickHouse SQL tokenizer: the statement facts the SQL port needs (statement-analysis.ts,
 * settings-clause.ts) and the read-only first pass (read-only-first-pass.ts) are read from its tokens.
 *
 * Pure: no I/O. It is not a parser, and on the read-only port it is only the fast first pass (the
 * engine's own parser judges every statement before it runs: analyst-engine.ts); where it cannot be
 * sure it errs towards seeing more code than the engine does (so a refusal, never a smuggled statement). Its string, comment and heredoc rules follow
 * what chdb 3.4 (ClickHouse 26.7) was measured to do: nested block comments, `#` comments only as `# `
 * or `#!`, `--` comments ending at LF only, $tag$ heredocs, and Unicode quotes (‘…’ strings,
 * “…” identifiers) that take no escapes.
 */
import { decodeEscapes } from './sql-escapes.ts'

export type TokenKind =
  | 'word'
  | 'quoted' // "identifier", `identifier`, “identifier”
  | 'string' // 'literal', ‘literal’
  | 'heredoc' // $tag$ … $tag$
  | 'number'
  | 'open' // ( [ {
  | 'close' // ) ] }
  | 'semicolon'
  | 'punct'

export interface Token {
  readonly kind: TokenKind
  readonly start: number
  readonly end: number
  /** Bracket depth outside this token: an opening and its closing bracket carry the same depth. */
  readonly depth: number
  readonly text: string
}

const LEFT_SINGLE = '\u2018'
const RIGHT_SINGLE = '\u2019'
const LEFT_DOUBLE = '\u201c'
const RIGHT_DOUBLE = '\u201d'

export const isWhitespace = (c: string) =>
  c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v'
const isDigit = (c: string) => c >= '0' && c <= '9'
const isHexDigit = (c: string) => isDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
const isWordCharASCII = (c: string) =>
  (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_' || isDigit(c)
const isUnicodeQuote = (c: string) =>
  c === LEFT_SINGLE || c === RIGHT_SINGLE || c === LEFT_DOUBLE || c === RIGHT_DOUBLE
// Non-ASCII characters are errors to the engine; taking them as word characters cannot hide a quote,
// a comment or a separator, as long as the Unicode quotes stay out.
const isWordChar = (c: string) => isWordCharASCII(c) || c === '$' || (c > '\x7f' && !isUnicodeQuote(c))

/**
 * Streams tokens; whitespace and comments are skipped. Follows ClickHouse's Lexer (src/Parsers/Lexer.cpp)
 * wherever it decides what is a string, a comment or code; notably numbers, whose end decides whether a
 * following `--` is a comment (`0x1e--x` is hex 0x1e and a comment, `1e--x` is 1e- and a minus).
 * Unterminated strings and comments run to the end, as the engine's error tokens do.
 */
export class Lexer {
  private pos = 0
  private depth = 0
  /** The previous token, which decides how a `.` or a number after it is read. */
  private prev: Token | undefined

  constructor(private readonly sql: string) {}

  next(): Token | undefined {
    this.skipTrivia()
    const sql = this.sql
    const start = this.pos
    if (start >= sql.length) return undefined
    const c = sql.charAt(start)
    const next = sql.charAt(start + 1)
    if (c === "'" || c === '"' || c === '`') {
      return this.make(c === "'" ? 'string' : 'quoted', start, this.scanQuoted(start, c))
    }
    if (c === LEFT_SINGLE || c === LEFT_DOUBLE) {
      const close = sql.indexOf(c === LEFT_SINGLE ? RIGHT_SINGLE : RIGHT_DOUBLE, start + 1)
      return this.make(c === LEFT_SINGLE ? 'string' : 'quoted', start, close === -1 ? sql.length : close + 1)
    }
    if (isDigit(c)) return this.scanNumber(start)
    if (c === '.') {
      const prev = this.prev
      const afterOperand =
        prev !== undefined &&
        ((prev.kind === 'close' && prev.text !== '}') ||
          prev.kind === 'word' ||
          prev.kind === 'quoted' ||
          prev.kind === 'number')
      if (start > 0 && (!isDigit(next) || afterOperand)) return this.make('punct', start, start + 1)
      let i = this.scanDigits(start + 1, true, false)
      i = this.scanExponent(i, false)
      return this.make('number', start, i)
    }
    if (c === '$') {
      const end = this.scanHeredoc(start)
      if (end !== undefined) return this.make('heredoc', start, end)
      if (!isWordCharASCII(next)) return this.make('punct', start, start + 1)
      return this.make('word', start, this.scanWord(start + 1))
    }
    if ((c === 'x' || c === 'X' || c === 'b' || c === 'B') && next === "'") {
      // x'4142' / b'0101': an invalid one is an error token reaching the end of the text.
      const hex = c === 'x' || c === 'X'
      let i = start + 2
      while (
        i < sql.length &&
        (hex ? isHexDigit(sql.charAt(i)) : sql.charAt(i) === '0' || sql.charAt(i) === '1')
      )
        i++
      return this.make('string', start, sql.charAt(i) === "'" ? i + 1 : sql.length)
    }
    if (isWordChar(c)) return this.make('word', start, this.scanWord(start + 1))
    if (c === '(' || c === '[' || c === '{') {
      const token = this.make('open', start, start + 1)
      this.depth++
      return token
    }
    if (c === ')' || c === ']' || c === '}') {
      this.depth = Math.max(0, this.depth - 1)
      return this.make('close', start, start + 1)
    }
    if (c === ';') return this.make('semicolon', start, start + 1)
    return this.make('punct', start, start + 1)
  }

  private make(kind: TokenKind, start: number, end: number): Token {
    this.pos = end
    const token = { kind, start, end, depth: this.depth, text: this.sql.slice(start, end) }
    this.prev = token
    return token
  }

  private skipTrivia(): void {
    const sql = this.sql
    for (;;) {
      const c = sql.charAt(this.pos)
      const next = sql.charAt(this.pos + 1)
      if (c === '') return
      if (isWhitespace(c)) {
        this.pos++
      } else if ((c === '-' && next === '-') || (c === '/' && next === '/')) {
        this.pos = lineEnd(sql, this.pos)
      } else if (c === '#' && (next === ' ' || next === '!')) {
        this.pos = lineEnd(sql, this.pos)
      } else if (c === '/' && next === '*') {
        this.pos = blockCommentEnd(sql, this.pos)
      } else {
        return
      }
    }
  }

  private scanWord(from: number): number {
    let i = from
    while (i < this.sql.length && isWordChar(this.sql.charAt(i))) i++
    return i
  }

  private scanQuoted(start: number, quote: string): number {
    const sql = this.sql
    let i = start + 1
    while (i < sql.length) {
      const c = sql.charAt(i)
      if (c === '\\') {
        i += 2
      } else if (c === quote) {
        if (sql.charAt(i + 1) === quote) i += 2
        else return i + 1
      } else {
        i++
      }
    }
    return sql.length
  }

  /** $tag$ … $tag$ with a tag of [A-Za-z0-9_]* (ClickHouse 26.7 takes no other tag, measured). */
  private scanHeredoc(start: number): number | undefined {
    const sql = this.sql
    let i = start + 1
    while (i < sql.length && isWordCharASCII(sql.charAt(i))) i++
    if (sql.charAt(i) !== '$') return undefined
    const delimiter = sql.slice(start, i + 1)
    const close = sql.indexOf(delimiter, i + 1)
    return close === -1 ? undefined : close + delimiter.length
  }

  /** A number as ClickHouse's lexer skips it; digits glued to word characters make a word. */
  private scanNumber(start: number): Token {
    const sql = this.sql
    let i: number
    if (this.prev?.kind === 'punct' && this.prev.text === '.') {
      // After a dot only an integer, so that x.1.1 is two tuple accesses.
      i = this.scanDigits(start + 1, false, false)
    } else {
      let hex = false
      let startOfBlock = false
      i = start + 1
      const marker = sql.charAt(start + 1)
      if (sql.charAt(start) === '0' && start + 2 < sql.length && 'xXbB'.includes(marker) && marker !== '') {
        const third = sql.charAt(start + 2)
        const valid = marker === 'x' || marker === 'X' ? isHexDigit(third) : third === '0' || third === '1'
        if (valid) {
          hex = marker === 'x' || marker === 'X'
          i = start + 2
          startOfBlock = true
        }
      }
      i = this.scanDigits(i, startOfBlock, hex)
      if (sql.charAt(i) === '.') i = this.scanDigits(i + 1, true, hex)
      i = this.scanExponent(i, hex)
    }
    if (i < sql.length && isWordCharASCII(sql.charAt(i))) {
      while (i < sql.length && isWordCharASCII(sql.charAt(i))) i++
      return this.make('word', start, i)
    }
    return this.make('number', start, i)
  }

  private scanDigits(from: number, startOfBlock: boolean, hex: boolean): number {
    let i = from
    let blockStart = startOfBlock
    while (i < this.sql.length) {
      const c = this.sql.charAt(i)
      if (!(hex ? isHexDigit(c) : isDigit(c)) && !this.isNumberSeparator(i, blockStart, hex)) break
      i++
      blockStart = false
    }
    return i
  }

  /** e/E (p/P for hex) with an optional sign that is taken only when something follows it. */
  private scanExponent(from: number, hex: boolean): number {
    const sql = this.sql
    const c = sql.charAt(from)
    if (from + 1 >= sql.length || !(hex ? c === 'p' || c === 'P' : c === 'e' || c === 'E')) return from
    let i = from + 1
    if (i + 1 < sql.length && (sql.charAt(i) === '-' || sql.charAt(i) === '+')) i++
    return this.scanDigits(i, true, false)
  }

  /** An underscore between digits (1_000), as ClickHouse's isNumberSeparator. */
  private isNumberSeparator(i: number, startOfBlock: boolean, hex: boolean): boolean {
    const sql = this.sql
    if (sql.charAt(i) !== '_' || startOfBlock) return false
    if (i + 1 >= sql.length) return false
    const next = sql.charAt(i + 1)
    return hex ? isHexDigit(next) : isDigit(next)
  }
}

function lineEnd(sql: string, from: number): number {
  const nl = sql.indexOf('\n', from)
  return nl === -1 ? sql.length : nl + 1
}

/** Block comments nest in ClickHouse: `/* /* *\/ *\/` is one comment. */
function blockCommentEnd(sql: string, from: number): number {
  let level = 0
  let i = from
  while (i < sql.length) {
    if (sql.startsWith('/*', i)) {
      level++
      i += 2
    } else if (sql.startsWith('*/', i)) {
      level--
      i += 2
      if (level === 0) return i
    } else {
      i++
    }
  }
  return sql.length
}

// Plain booleans, not type guards: a false answer says nothing about whether the token exists.
export const isWord = (t: Token | undefined, word: string): boolean =>
  t !== undefined && t.kind === 'word' && t.text.toUpperCase() === word
export const isName = (t: Token | undefined): boolean =>
  t !== undefined && (t.kind === 'word' || t.kind === 'quoted')
export const isPunct = (t: Token | undefined, c: string): boolean =>
  t !== undefined && t.kind === 'punct' && t.text === c

/** The name a word or quoted identifier token stands for. */
export function identifierName(t: Token): string {
  if (t.kind !== 'quoted') return t.text
  const open = t.text.charAt(0)
  if (open === LEFT_DOUBLE) return t.text.slice(1, t.text.endsWith(RIGHT_DOUBLE) ? -1 : undefined)
  const body = t.text.slice(1, t.text.length > 1 && t.text.endsWith(open) ? -1 : undefined)
  // Decoded exactly as the engine does, so `fil\x65` is seen as the `file` it names.
  return decodeEscapes(body, { quote: open })
}

/** Index of the bracket closing the one at `open`, or -1. */
export function matchingClose(tokens: readonly Token[], open: number, limit = tokens.length): number {
  const depth = tokens[open]?.depth
  for (let k = open + 1; k < limit; k++) {
    const t = tokens[k] as Token
    if (t.kind === 'close' && t.depth === depth) return k
  }
  return -1
}
