import { describe, expect, it } from 'vitest'
import { Lexer, type Token } from '../../pipelines/text/sql-tokenizer.ts'

/** All tokens of a text, across statements. */
function tokenize(sql: string): Token[] {
  const lexer = new Lexer(sql)
  const tokens: Token[] = []
  for (let t = lexer.next(); t; t = lexer.next()) tokens.push(t)
  return tokens
}

describe('tokenize', () => {
  it('keeps strings, quoted identifiers, heredocs and comments whole', () => {
    const tokens = tokenize("SELECT 'a;b''c\\'d', `x;y`, \"p;q\", $$h;d$$, ‘u;v’ -- tail; x\n/* c; */ 1")
    expect(tokens.map((t) => [t.kind, t.text])).toEqual([
      ['word', 'SELECT'],
      ['string', "'a;b''c\\'d'"],
      ['punct', ','],
      ['quoted', '`x;y`'],
      ['punct', ','],
      ['quoted', '"p;q"'],
      ['punct', ','],
      ['heredoc', '$$h;d$$'],
      ['punct', ','],
      ['string', '‘u;v’'],
      ['number', '1'],
    ])
  })

  it('tracks bracket depth', () => {
    const tokens = tokenize('f(a, [b, {c}])')
    expect(tokens.map((t) => `${t.text}@${t.depth}`).join(' ')).toBe(
      'f@0 (@0 a@1 ,@1 [@1 b@2 ,@2 {@2 c@3 }@2 ]@1 )@0',
    )
  })
})
