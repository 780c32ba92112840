/**
 * A small ClickHouse SQL tokenizer and the statement facts the SQL port needs: how many statements a
 * text holds, what kind the first one is, its trailing FORMAT and SETTINGS clauses, INTO OUTFILE, the
 * declared types of {name:Type} placeholders, and a way to add query-level settings.
 *
 * Pure: no I/O. It is not a parser, and on the read-only port it is only the fast first pass (the
 * engine's own parser judges every statement before it runs: analyst-engine.ts); where it cannot be
 * sure it errs towards seeing more code than the engine does (so a refusal, never a smuggled statement). Its string, comment and heredoc rules follow
 * what chdb 3.4 (ClickHouse 26.7) was measured to do: nested block comments, `#` comments only as `# `
 * or `#!`, `--` comments ending at LF only, $tag$ heredocs, and Unicode quotes (‘…’ strings,
 * “…” identifiers) that take no escapes.
 */

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

const isWhitespace = (c: string) =>
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

  /** Offset just after the last token returned (or the start). */
  get position(): number {
    return this.pos
  }

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

/** All tokens of a text, across statements. */
export function tokenize(sql: string): Token[] {
  const lexer = new Lexer(sql)
  const tokens: Token[] = []
  for (let t = lexer.next(); t; t = lexer.next()) tokens.push(t)
  return tokens
}

// Plain booleans, not type guards: a false answer says nothing about whether the token exists.
const isWord = (t: Token | undefined, word: string): boolean =>
  t !== undefined && t.kind === 'word' && t.text.toUpperCase() === word
const isName = (t: Token | undefined): boolean =>
  t !== undefined && (t.kind === 'word' || t.kind === 'quoted')
const isPunct = (t: Token | undefined, c: string): boolean =>
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

const ESCAPES: Record<string, number> = { a: 7, b: 8, e: 27, f: 12, n: 10, r: 13, t: 9, v: 11, '0': 0 }

/**
 * Backslash escapes read the way ClickHouse reads them in quoted strings and identifiers: \xHH is a
 * byte, \N is nothing, the C escapes, and an unknown escape keeps its backslash ('100\%' stays
 * '100\%'). `quote` also turns a doubled quote into one. With `requote`, the text is to be parsed
 * again as a literal: a decoded ' is written as '' and \N is left alone.
 */
export function decodeEscapes(text: string, options: { quote?: string; requote?: boolean } = {}): string {
  const bytes: number[] = []
  const encoder = new TextEncoder()
  const pushText = (c: string) => {
    for (const b of encoder.encode(c)) bytes.push(b)
  }
  const pushByte = (b: number) => {
    if (options.requote && b === 0x27) bytes.push(0x27, 0x27)
    else bytes.push(b)
  }
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i)
    if (options.quote !== undefined && c === options.quote && text.charAt(i + 1) === c) {
      pushByte(c.charCodeAt(0))
      i++
      continue
    }
    if (c !== '\\' || i + 1 >= text.length) {
      pushText(c)
      continue
    }
    const next = text.charAt(++i)
    if (next === 'x' && /^[0-9A-Fa-f]{2}$/.test(text.slice(i + 1, i + 3))) {
      pushByte(parseInt(text.slice(i + 1, i + 3), 16))
      i += 2
    } else if (next === 'N' && !options.requote) {
      // nothing: ClickHouse reads \N inside an escaped string as an empty piece
    } else if (next in ESCAPES) {
      bytes.push(ESCAPES[next] as number)
    } else if (next === '\\' || next === "'" || next === '"' || next === '`' || next === '/') {
      pushByte(next.charCodeAt(0))
    } else {
      bytes.push(0x5c)
      pushText(next)
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes))
}

export interface SettingEntry {
  /** The setting name, unquoted. */
  readonly name: string
  /** The value as SQL literal text, exactly as written. */
  readonly value: string
}

export interface SettingsClause {
  readonly entries: readonly SettingEntry[]
  /** Source range of the clause, from the SETTINGS keyword to the end of its last value. */
  readonly start: number
  readonly end: number
  /** Token index range [first, last + 1). */
  readonly firstToken: number
  readonly endToken: number
}

/**
 * Parses `SETTINGS name = value [, …]` starting at token index `at` (the SETTINGS word). A value is a
 * literal: an optionally signed number, a string, a word (true, DEFAULT, …) or one bracketed group.
 */
export function parseSettingsClause(tokens: readonly Token[], at: number, limit = tokens.length) {
  const keyword = tokens[at]
  if (!isWord(keyword, 'SETTINGS')) return undefined
  const entries: SettingEntry[] = []
  let i = at + 1
  for (;;) {
    const name = tokens[i]
    if (i + 2 >= limit || !isName(name) || !isPunct(tokens[i + 1], '=')) return undefined
    let j = i + 2
    if (isPunct(tokens[j], '-') || isPunct(tokens[j], '+')) j++
    const value = tokens[j]
    if (j >= limit || value === undefined) return undefined
    if (value.kind === 'open') {
      j = matchingClose(tokens, j, limit)
      if (j === -1) return undefined
    } else if (value.kind === 'close' || value.kind === 'semicolon' || value.kind === 'punct') {
      return undefined
    }
    const last = tokens[j] as Token
    entries.push({ name: identifierName(name as Token), value: tokenSourceText(tokens, i + 2, j + 1) })
    i = j + 1
    if (i < limit && isPunct(tokens[i], ',')) {
      i++
      continue
    }
    const clause: SettingsClause = {
      entries,
      start: (keyword as Token).start,
      end: last.end,
      firstToken: at,
      endToken: i,
    }
    return clause
  }
}

function tokenSourceText(tokens: readonly Token[], from: number, to: number): string {
  let text = ''
  for (let k = from; k < to; k++) {
    const t = tokens[k] as Token
    const prev = tokens[k - 1]
    if (k > from && prev && prev.end < t.start) text += ' '
    text += t.text
  }
  return text
}

/** Index of the bracket closing the one at `open`, or -1. */
function matchingClose(tokens: readonly Token[], open: number, limit = tokens.length): number {
  const depth = tokens[open]?.depth
  for (let k = open + 1; k < limit; k++) {
    const t = tokens[k] as Token
    if (t.kind === 'close' && t.depth === depth) return k
  }
  return -1
}

/** Token index where a SETTINGS clause looks like it starts: `SETTINGS name =`. */
export function looksLikeSettingsClause(tokens: readonly Token[], at: number): boolean {
  return isWord(tokens[at], 'SETTINGS') && isName(tokens[at + 1]) && isPunct(tokens[at + 2], '=')
}

export interface FormatClause {
  /** Format name, unquoted. */
  readonly name: string
  readonly start: number
  readonly end: number
  readonly nameText: string
}

export interface StatementAnalysis {
  /** First keyword upper-cased; '(' for a parenthesised query; '' when there is no statement. */
  readonly kind: string
  /** A statement separator followed by anything but whitespace, comments or more separators. */
  readonly multiStatement: boolean
  /** Tokens of the first statement (for INSERT with inline data: up to the format name). */
  readonly tokens: readonly Token[]
  /** Trailing top-level FORMAT: the output format of a query, the data format of an INSERT. */
  readonly format: FormatClause | undefined
  /**
   * Query-level SETTINGS clauses: for INSERT the one after the table (and columns); otherwise the
   * trailing clause before FORMAT and the one after FORMAT, in that order.
   */
  readonly settings: readonly SettingsClause[]
  readonly intoOutfile: boolean
  /** Where a merged SETTINGS clause goes, and what text to keep after it. */
  readonly settingsAt: number
  readonly keepFrom: number
  /** INSERT only: offset where inline data starts (after `FORMAT name`), when there is a FORMAT. */
  readonly dataStart: number | undefined
}

/** Analyses the first statement of `sql` and whether more follow. */
export function analyzeStatement(sql: string): StatementAnalysis {
  const lexer = new Lexer(sql)
  const tokens: Token[] = []
  let sawSeparator = false
  let dataStart: number | undefined
  let kind = ''

  for (let t = lexer.next(); t; t = lexer.next()) {
    if (t.kind === 'semicolon') {
      sawSeparator = true
      break
    }
    tokens.push(t)
    if (tokens.length === 1)
      kind = t.kind === 'open' && t.text === '(' ? '(' : t.kind === 'word' ? t.text.toUpperCase() : '?'
    if (kind === 'INSERT' && isWord(t, 'FORMAT') && t.depth === 0) {
      // Only a FORMAT after the complete head starts data: `INSERT INTO format FORMAT CSV` is legal.
      const head = insertHeadEnd(tokens)
      if (head !== undefined && tokens.length - 1 >= head) {
        const name = lexer.next()
        if (name && isName(name)) {
          tokens.push(name)
          dataStart = name.end
          break
        }
        if (name?.kind === 'semicolon') {
          sawSeparator = true
          break
        }
        if (name) tokens.push(name)
      }
    }
  }

  let multiStatement = false
  if (sawSeparator) {
    for (let t = lexer.next(); t; t = lexer.next()) {
      if (t.kind !== 'semicolon') {
        multiStatement = true
        break
      }
    }
  }
  if (tokens.length === 0) kind = ''

  const intoOutfile = tokens.some((t, i) => isWord(t, 'INTO') && isWord(tokens[i + 1], 'OUTFILE'))
  const lastEnd = tokens.at(-1)?.end ?? 0

  if (kind === 'INSERT') {
    const head = insertHeadEnd(tokens)
    const headEndOffset = head !== undefined && head > 0 ? (tokens[head - 1] as Token).end : lastEnd
    const clause = head !== undefined ? parseSettingsClause(tokens, head) : undefined
    const formatToken = dataStart !== undefined ? tokens.at(-1) : undefined
    return {
      kind,
      multiStatement,
      tokens,
      format: formatToken ? formatClause(formatToken) : undefined,
      settings: clause ? [clause] : [],
      intoOutfile,
      settingsAt: headEndOffset,
      keepFrom: clause ? clause.end : headEndOffset,
      dataStart,
    }
  }

  // Trailing clauses, scanned from the end: [pre SETTINGS] [FORMAT name] [post SETTINGS].
  let end = tokens.length
  let post = trailingClauseEndingAt(tokens, end)
  if (post) end = post.firstToken
  let format: FormatClause | undefined
  const maybeFormat = tokens[end - 2]
  const maybeName = tokens[end - 1]
  if (
    end > 2 &&
    maybeFormat &&
    maybeName &&
    isWord(maybeFormat, 'FORMAT') &&
    maybeFormat.depth === 0 &&
    isName(maybeName)
  ) {
    format = formatClause(maybeName)
    end -= 2
  }
  let pre: SettingsClause | undefined
  if (format) {
    pre = trailingClauseEndingAt(tokens, end)
  } else {
    pre = post
    post = undefined
  }
  if (pre) end = pre.firstToken
  const bodyEnd = end > 0 ? (tokens[end - 1] as Token).end : 0
  return {
    kind,
    multiStatement,
    tokens,
    format,
    settings: [pre, post].filter((c): c is SettingsClause => c !== undefined),
    intoOutfile,
    settingsAt: bodyEnd,
    keepFrom: lastEnd,
    dataStart: undefined,
  }
}

function formatClause(name: Token): FormatClause {
  return { name: identifierName(name), nameText: name.text, start: name.start, end: name.end }
}

/** The last top-level SETTINGS clause that ends exactly at token index `end`. */
function trailingClauseEndingAt(tokens: readonly Token[], end: number): SettingsClause | undefined {
  for (let i = end - 3; i > 0; i--) {
    const t = tokens[i] as Token
    if (t.depth !== 0 || !isWord(t, 'SETTINGS')) continue
    const clause = parseSettingsClause(tokens, i, end)
    if (clause && clause.endToken === end) return clause
  }
  return undefined
}

/**
 * Token index just after `INSERT INTO [TABLE] name [(columns)]` or `INSERT INTO [TABLE] FUNCTION f(…)
 * [(columns)]`; undefined when the tokens do not (yet) hold a complete head.
 */
function insertHeadEnd(tokens: readonly Token[]): number | undefined {
  let i = 1
  if (!isWord(tokens[i], 'INTO')) return undefined
  i++
  if (isWord(tokens[i], 'TABLE')) i++
  if (isWord(tokens[i], 'FUNCTION')) {
    if (!isName(tokens[i + 1]) || tokens[i + 2]?.kind !== 'open') return undefined
    const close = matchingClose(tokens, i + 2)
    if (close === -1) return undefined
    i = close + 1
  } else {
    if (!isName(tokens[i])) return undefined
    i++
    if (isPunct(tokens[i], '.')) {
      if (!isName(tokens[i + 1])) return undefined
      i += 2
    }
  }
  const next = tokens[i]
  if (next?.kind === 'open' && next.text === '(') {
    const close = matchingClose(tokens, i)
    if (close === -1) return undefined
    i = close + 1
  }
  return i
}

export const hasMultipleStatements = (sql: string): boolean => analyzeStatement(sql).multiStatement
export const statementKind = (sql: string): string => analyzeStatement(sql).kind
export const trailingFormat = (sql: string): string | undefined => analyzeStatement(sql).format?.name
export const hasIntoOutfile = (sql: string): boolean => analyzeStatement(sql).intoOutfile

/** The statement's own query-level settings, in the order the engine applies them (last wins). */
export function trailingSettings(sql: string): SettingEntry[] {
  return effectiveEntries(analyzeStatement(sql))
}

function effectiveEntries(analysis: StatementAnalysis): SettingEntry[] {
  // A clause after FORMAT is applied before the one in front of it, so the front one wins.
  const [pre, post] = analysis.settings
  return [...(post?.entries ?? []), ...(pre?.entries ?? [])]
}

export type SettingValue = string | number | boolean

const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

export function isValidSettingName(name: string): boolean {
  return SETTING_NAME.test(name)
}

/** A setting value as a SQL literal: numbers bare, booleans as 0/1, strings quoted and escaped. */
export function renderSettingValue(value: SettingValue): string {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw new Error(`setting value ${value} is not a finite number`)
    return String(value)
  }
  if (typeof value === 'boolean') return value ? '1' : '0'
  return quoteString(value)
}

export function quoteString(value: string): string {
  let out = "'"
  for (const c of value) {
    switch (c) {
      case '\\':
        out += '\\\\'
        break
      case "'":
        out += "\\'"
        break
      case '\n':
        out += '\\n'
        break
      case '\r':
        out += '\\r'
        break
      case '\t':
        out += '\\t'
        break
      case '\0':
        out += '\\0'
        break
      default:
        out += c
    }
  }
  return out + "'"
}

export interface AddSettings {
  /** Applied first: the statement's own SETTINGS override these (URL settings in ClickHouse). */
  defaults?: Record<string, SettingValue>
  /** Applied last, in this order: they override the statement's own settings. */
  overrides?: Record<string, SettingValue>
}

/**
 * Returns `sql` with one query-level SETTINGS clause holding `defaults`, the statement's own top-level
 * settings and `overrides`, each name once, overrides last. Placed where ClickHouse accepts it: before
 * FORMAT for queries, after the table (and column list) for INSERT. Throws on multi-statement text and
 * on names that are not plain identifiers.
 */
export function addSettings(sql: string, add: AddSettings, analysis = analyzeStatement(sql)): string {
  if (analysis.multiStatement) throw new Error('cannot add settings to more than one statement')
  if (analysis.kind === '') return sql
  const overrides = Object.entries(add.overrides ?? {})
  const defaults = Object.entries(add.defaults ?? {})
  for (const [name] of [...defaults, ...overrides]) {
    if (!isValidSettingName(name)) throw new Error(`invalid setting name: ${JSON.stringify(name)}`)
  }
  const own = effectiveEntries(analysis)
  if (overrides.length === 0 && defaults.length === 0) return sql

  const merged = new Map<string, string>()
  const put = (name: string, value: string) => {
    merged.delete(name)
    merged.set(name, value)
  }
  const ownNames = new Set(own.map((e) => e.name))
  const overrideNames = new Set(overrides.map(([name]) => name))
  for (const [name, value] of defaults) {
    if (!ownNames.has(name) && !overrideNames.has(name)) put(name, renderSettingValue(value))
  }
  for (const entry of own) {
    if (!overrideNames.has(entry.name)) put(entry.name, entry.value)
  }
  for (const [name, value] of overrides) put(name, renderSettingValue(value))

  const clause = `SETTINGS ${[...merged].map(([name, value]) => `${renderName(name)} = ${value}`).join(', ')}`
  if (analysis.kind === 'INSERT') {
    return `${sql.slice(0, analysis.settingsAt)} ${clause}${leadingSpace(sql.slice(analysis.keepFrom))}`
  }
  const format = analysis.format ? ` FORMAT ${analysis.format.nameText}` : ''
  return `${sql.slice(0, analysis.settingsAt)} ${clause}${format}`
}

function renderName(name: string): string {
  return SETTING_NAME.test(name) ? name : `\`${name.replace(/\\/g, '\\\\').replace(/`/g, '\\`')}\``
}

function leadingSpace(rest: string): string {
  return rest === '' || isWhitespace(rest.charAt(0)) ? rest : ` ${rest}`
}

/** Declared types of `{name:Type}` placeholders in the first statement (the last declaration wins). */
export function queryParameterTypes(sql: string, analysis = analyzeStatement(sql)): Map<string, string> {
  const types = new Map<string, string>()
  const tokens = analysis.tokens
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token
    if (t.kind !== 'open' || t.text !== '{') continue
    const name = tokens[i + 1]
    const colon = tokens[i + 2]
    if (name?.kind !== 'word' || !colon || !isPunct(colon, ':')) continue
    const close = matchingClose(tokens, i)
    if (close === -1) continue
    types.set(name.text, sql.slice(colon.end, (tokens[close] as Token).start).trim())
  }
  return types
}
