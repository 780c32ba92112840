/**
 * Query-level `SETTINGS name = value [, …]` clauses over the tokenizer's tokens, and the names such a
 * clause takes. Pure: no I/O.
 */
import {
  identifierName,
  isName,
  isPunct,
  isWord,
  matchingClose,
  type Token,
} from '../../pipelines/text/sql-tokenizer.ts'

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

/** Token index where a SETTINGS clause looks like it starts: `SETTINGS name =`. */
export function looksLikeSettingsClause(tokens: readonly Token[], at: number): boolean {
  return isWord(tokens[at], 'SETTINGS') && isName(tokens[at + 1]) && isPunct(tokens[at + 2], '=')
}

const SETTING_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

export function isValidSettingName(name: string): boolean {
  return SETTING_NAME.test(name)
}
