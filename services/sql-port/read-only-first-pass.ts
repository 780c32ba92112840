/**
 * The read-only port's first pass over a statement, on the tokenizer's reading: which statement kinds
 * it runs, what readonly=1 was measured to let through that it refuses, and the settings an analyst
 * may not name. Pure: no I/O.
 */
import { looksLikeSettingsClause } from './settings-clause.ts'
import { identifierName, type Token } from '../../pipelines/text/sql-tokenizer.ts'
import type { StatementAnalysis } from './statement-analysis.ts'

/** Statement kinds the read-only port runs (the first keyword, or '(' for a parenthesised query). */
export const READ_ONLY_KINDS: ReadonlySet<string> = new Set([
  'SELECT',
  'WITH',
  'SHOW',
  'DESCRIBE',
  'DESC',
  'EXPLAIN',
  'EXISTS',
  '(',
])

/** Functions that read server files even under readonly=1 (measured: file() does). */
const FILE_FUNCTIONS = new Set(['file', 'catboostevaluate'])

/**
 * Why the read-only port refuses a statement, or undefined: the fast first pass, on the lexer's
 * reading. The engine's own parser has the last word (analyst-engine.ts: its classifier and
 * read-only-ast.ts over EXPLAIN AST), and the connection's readonly=1 refuses writes and most table
 * functions. This covers what readonly=1 was measured to let through: a SETTINGS clause in a subquery
 * (readonly=0 there wins), the file() function, DESCRIBE of a table function, and INTO OUTFILE.
 */
export function readOnlyRefusal(analysis: StatementAnalysis): string | undefined {
  if (!READ_ONLY_KINDS.has(analysis.kind)) {
    return 'only SELECT, WITH, SHOW, DESCRIBE, EXPLAIN and EXISTS statements are allowed on this port'
  }
  if (analysis.intoOutfile) return 'INTO OUTFILE is not allowed on this port'
  const tokens = analysis.tokens
  const ownClauses = new Set(analysis.settings.map((c) => c.firstToken))
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i] as Token
    if ((t.kind === 'word' || t.kind === 'quoted') && tokens[i + 1]?.text === '(') {
      const name = identifierName(t).toLowerCase()
      if (FILE_FUNCTIONS.has(name)) return `the ${name} function is not allowed on this port`
    }
    if (looksLikeSettingsClause(tokens, i) && !ownClauses.has(i)) {
      return 'a SETTINGS clause is only allowed at the end of the statement on this port'
    }
  }
  if (analysis.kind === 'DESCRIBE' || analysis.kind === 'DESC') {
    let i = 1
    if (tokens[i]?.kind === 'word' && tokens[i]?.text.toUpperCase() === 'TABLE') i++
    const target = tokens[i]
    if (target && (target.kind === 'word' || target.kind === 'quoted') && tokens[i + 1]?.text === '(') {
      return 'DESCRIBE of a table function is not allowed on this port'
    }
  }
  return undefined
}

/**
 * Settings an analyst may not set on the read-only port: the ones that name server files or
 * directories (format schemas, templates, output schemas), introspection and DDL switches. A fast
 * first refusal: the connection's readonly=1 refuses any change to them (and to every other setting).
 */
export function isDeniedReadOnlySetting(name: string): boolean {
  return (
    /(^|_)(schema|schemas|template|file|files|path|paths|dir|directory)(_|$)/i.test(name) ||
    /introspection|^allow_ddl$/i.test(name)
  )
}
