import { describe, expect, it } from 'vitest'
import { astRefusal, parseExplainAst, type AstNode } from '../../services/sql-port/read-only-ast.ts'

// `EXPLAIN AST …` as chdb 3.4.0 (ClickHouse 26.7) prints it in TabSeparated, captured from the engine.
const TABLE_FUNCTIONS = new Set([
  'file',
  'url',
  's3',
  'remote',
  'numbers',
  'values',
  'view',
  'cluster',
  'eval',
])

const tree = (lines: string[]): AstNode => {
  const root = parseExplainAst(`${lines.join('\n')}\n`)
  if (!root) throw new Error('no tree')
  return root
}

const selectFromSubqueryWithSettings = tree([
  'SelectWithUnionQuery (children 1)',
  ' ExpressionList (children 1)',
  '  SelectQuery (children 3)',
  '   ExpressionList (children 1)',
  '    Asterisk',
  '   TablesInSelectQuery (children 1)',
  '    TablesInSelectQueryElement (children 1)',
  '     TableExpression (children 1)',
  '      Subquery (children 1)',
  '       SelectWithUnionQuery (children 1)',
  '        ExpressionList (children 1)',
  '         SelectQuery (children 2)',
  '          ExpressionList (children 1)',
  '           Function getSetting (children 1)',
  '            ExpressionList (children 1)',
  "             Literal \\'readonly\\'",
  '          Set',
  '   Set',
  ' Set',
  ' Identifier JSON',
])

describe('parseExplainAst', () => {
  it('builds the tree from one row per node, indented one space per level', () => {
    expect(selectFromSubqueryWithSettings.type).toBe('SelectWithUnionQuery')
    const select = selectFromSubqueryWithSettings.children[0]?.children[0]
    expect(select?.type).toBe('SelectQuery')
    expect(select?.children.map((c) => c.type)).toEqual(['ExpressionList', 'TablesInSelectQuery', 'Set'])
    expect(selectFromSubqueryWithSettings.children.map((c) => c.type)).toEqual([
      'ExpressionList',
      'Set',
      'Identifier',
    ])
  })

  it('reads a function name with its escapes decoded, and nothing in a name becomes a node', () => {
    const root = tree([
      'SelectWithUnionQuery (children 1)',
      ' ExpressionList (children 1)',
      '  SelectQuery (children 1)',
      '   ExpressionList (children 2)',
      '    Literal UInt64_1 (alias x\\n     Set)',
      '    Function a\\tb\\\\c (alias f) (children 1)',
      '     ExpressionList (children 1)',
      '      Literal UInt64_1',
    ])
    const items = root.children[0]?.children[0]?.children[0]?.children ?? []
    expect(items.map((n) => [n.type, n.name])).toEqual([
      ['Literal', ''],
      ['Function', 'a\tb\\c'],
    ])
    expect(astRefusal(root, TABLE_FUNCTIONS)).toBeUndefined()
  })

  it('answers undefined for an empty answer', () => {
    expect(parseExplainAst('')).toBeUndefined()
  })
})

describe('astRefusal', () => {
  it('refuses a SETTINGS clause of a subquery, which the engine applies without the readonly check', () => {
    expect(astRefusal(selectFromSubqueryWithSettings, TABLE_FUNCTIONS)).toMatch(/SETTINGS clause/)
  })

  it('lets the statement’s own SETTINGS through (the engine checks them): after FORMAT, on the last UNION arm, under EXPLAIN', () => {
    const own = tree([
      'SelectWithUnionQuery (children 3)',
      ' ExpressionList (children 2)',
      '  SelectQuery (children 1)',
      '   ExpressionList (children 1)',
      '    Literal UInt64_1',
      '  SelectQuery (children 2)',
      '   ExpressionList (children 1)',
      '    Literal UInt64_2',
      '   Set',
      ' Set',
      ' Identifier JSON',
    ])
    expect(astRefusal(own, TABLE_FUNCTIONS)).toBeUndefined()
    const explain = tree([
      'Explain EXPLAIN (children 2)',
      ' Set',
      ' SelectWithUnionQuery (children 1)',
      '  ExpressionList (children 1)',
      '   SelectQuery (children 2)',
      '    ExpressionList (children 1)',
      '     Literal UInt64_1',
      '    Set',
    ])
    expect(astRefusal(explain, TABLE_FUNCTIONS)).toBeUndefined()
    const describe = tree([
      'DescribeQuery (children 2)',
      ' TableExpression (children 1)',
      '  TableIdentifier system.one',
      ' Set',
    ])
    expect(astRefusal(describe, TABLE_FUNCTIONS)).toBeUndefined()
  })

  it('refuses the SETTINGS of an earlier UNION arm, which the engine applies unchecked', () => {
    const firstArm = tree([
      'SelectWithUnionQuery (children 1)',
      ' ExpressionList (children 2)',
      '  SelectQuery (children 2)',
      '   ExpressionList (children 1)',
      '    Literal UInt64_1',
      '   Set',
      '  SelectQuery (children 1)',
      '   ExpressionList (children 1)',
      '    Literal UInt64_2',
    ])
    expect(astRefusal(firstArm, TABLE_FUNCTIONS)).toMatch(/SETTINGS clause/)
  })

  const selecting = (functionRow: string) =>
    tree([
      'SelectWithUnionQuery (children 1)',
      ' ExpressionList (children 1)',
      '  SelectQuery (children 2)',
      '   ExpressionList (children 1)',
      '    Asterisk',
      '   TablesInSelectQuery (children 1)',
      '    TablesInSelectQueryElement (children 1)',
      '     TableExpression (children 1)',
      `      ${functionRow}`,
      '       ExpressionList (children 1)',
      "        Literal \\'x\\'",
    ])

  it.each([
    ['Function file (children 1)', /the file function/],
    ['Function url (alias u) (children 1)', /the url table function/],
    ['Function S3 (children 1)', /the S3 table function/],
    ['Function remote (children 1)', /the remote table function/],
    ['Function cluster (children 1)', /the cluster table function/],
    ['Function eval (children 1)', /the eval table function/],
    ['Function catboostEvaluate (children 1)', /the catboostEvaluate function/],
  ])('refuses %s wherever it appears', (row, why) => {
    expect(astRefusal(selecting(row), TABLE_FUNCTIONS)).toMatch(why)
  })

  it.each(['Function numbers (children 1)', 'Function values (children 1)', 'Function dictGet (children 1)'])(
    'lets %s through',
    (row) => {
      expect(astRefusal(selecting(row), TABLE_FUNCTIONS)).toBeUndefined()
    },
  )

  it('refuses a table function the engine knows and this port has not reviewed', () => {
    expect(
      astRefusal(selecting('Function shinyNewSource (children 1)'), new Set(['shinynewsource'])),
    ).toMatch(/shinyNewSource table function/)
  })
})
