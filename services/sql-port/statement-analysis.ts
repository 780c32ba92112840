/**
 * The statement facts the SQL port needs, read from the tokenizer's tokens (sql-tokenizer.ts): how
 * many statements a text holds, what kind the first one is, its trailing FORMAT and SETTINGS clauses,
 * INTO OUTFILE, where INSERT data starts, and the declared types of {name:Type} placeholders.
 * Pure: no I/O.
 */
import { parseSettingsClause, type SettingsClause } from './settings-clause.ts'
import {
  identifierName,
  isName,
  isPunct,
  isWord,
  Lexer,
  matchingClose,
  type Token,
} from '../../pipelines/text/sql-tokenizer.ts'

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
