import { describe, expect, it } from 'vitest'
import {
  addSettings,
  analyzeStatement,
  hasIntoOutfile,
  hasMultipleStatements,
  queryParameterTypes,
  renderSettingValue,
  statementKind,
  tokenize,
  trailingFormat,
  trailingSettings,
} from '../../services/sql-port/sql-lexer.ts'

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

describe('multi-statement detection', () => {
  it.each([
    ['SELECT 1', false],
    ['SELECT 1;', false],
    ['SELECT 1 ;; ; ', false],
    ['SELECT 1; -- only a comment\n/* and another */', false],
    ['SELECT 1; DROP TABLE t', true],
    ['SELECT 1;DROP TABLE t', true],
    ["SELECT 'a;b'", false],
    ["SELECT 'it\\'s; fine'", false],
    ["SELECT 'it''s; fine'", false],
    ["SELECT 'a\\\\'; SELECT 2", true],
    ['SELECT `a;b` FROM t', false],
    ['SELECT "a;b" FROM t', false],
    ['SELECT 1 -- ; DROP TABLE t', false],
    ['SELECT 1 -- x\r; DROP TABLE t', false],
    ['SELECT 1 # ; DROP TABLE t', false],
    ['SELECT 1 /* ; */', false],
    ['SELECT 1 /* /* */ ; SELECT 2 */', false],
    ['SELECT 1 /* /* */ */ ; SELECT 2', true],
    ['SELECT $$a;b$$', false],
    ['SELECT $t$a;b$t$; SELECT 2', true],
    ['SELECT ‘it’s’; SELECT 2', true],
    ['SELECT ‘a;b’', false],
    ['SELECT 1 AS “x;y”', false],
    [';SELECT 1', true],
    ['SELECT 1 FORMAT JSON;  SELECT 2', true],
    ['INSERT INTO t FORMAT JSONEachRow\n{"s":"a; DROP TABLE t"}\n;\nDROP TABLE t', false],
    ["INSERT INTO t VALUES ('a;b'); DROP TABLE t", true],
    ['INSERT INTO format FORMAT CSV\n1;2', false],
    // Where a number ends decides whether `--` starts a comment (as the engine's lexer decides it).
    ["SELECT 0x1e--'\n; DROP TABLE t; --'", true],
    ["SELECT 0x1E--'\n; DROP TABLE t; --'", true],
    ["SELECT t.1e--'\n; DROP TABLE t; --'", true],
    ["SELECT 1_0--'\n; DROP TABLE t; --'", true],
    ["SELECT 1e--'\n; DROP TABLE t; --'", false],
    ["SELECT 1.5e--'\n; DROP TABLE t; --'", false],
    // After a word a dot is a dot, and 5e a word: the engine sees a comment.
    ["SELECT .5e--'\n; DROP TABLE t; --'", true],
    ["SELECT (.5e--'\n; DROP TABLE t; --')", false],
    ["SELECT 0x1p--'\n; DROP TABLE t; --'", false],
    ["SELECT 1 // '\n; DROP TABLE t; --'", true],
    ["SELECT 1 #'\n; DROP TABLE t; --'", false],
    ["SELECT x'41'; SELECT 2", true],
    ["SELECT x'4g'; SELECT 2", false],
    ["SELECT $a b$ ';' $a b$", false],
  ])('%j → %s', (sql, multi) => {
    expect(hasMultipleStatements(sql)).toBe(multi)
  })
})

describe('statement kind', () => {
  it.each([
    ['select 1', 'SELECT'],
    ['  \n-- c\n/* x */ WITH x AS (SELECT 1) SELECT * FROM x', 'WITH'],
    ['(SELECT 1) UNION ALL (SELECT 2)', '('],
    ['desc system.one', 'DESC'],
    ['ExPlAiN AST SELECT 1', 'EXPLAIN'],
    ['insert into t values (1)', 'INSERT'],
    ["'x'", '?'],
    ['', ''],
    ['  -- nothing\n', ''],
    [';', ''],
  ])('%j → %j', (sql, kind) => {
    expect(statementKind(sql)).toBe(kind)
  })
})

describe('trailing FORMAT and SETTINGS', () => {
  it.each([
    ['SELECT 1', undefined, []],
    ['SELECT 1 FORMAT JSON', 'JSON', []],
    ['select 1 format jsoneachrow;', 'jsoneachrow', []],
    ['SELECT 1 FORMAT `CSV`', 'CSV', []],
    ['SELECT 1 \nFORMAT   JSONEachRow  -- trailing', 'JSONEachRow', []],
    ['SELECT 1 SETTINGS a = 1', undefined, [['a', '1']]],
    [
      "SELECT 1 SETTINGS a=1, b='x' FORMAT TSV",
      'TSV',
      [
        ['a', '1'],
        ['b', "'x'"],
      ],
    ],
    // After FORMAT is applied first, so the clause in front of FORMAT comes last.
    [
      'SELECT 1 SETTINGS a=1 FORMAT TSV SETTINGS b=-2',
      'TSV',
      [
        ['b', '-2'],
        ['a', '1'],
      ],
    ],
    [
      "SELECT 1 FORMAT TSV SETTINGS m = {'k':'v'}, n = [1, 2]",
      'TSV',
      [
        ['m', "{'k':'v'}"],
        ['n', '[1, 2]'],
      ],
    ],
    ['SELECT 1 SETTINGS `readonly` = 0', undefined, [['readonly', '0']]],
    ['WITH x AS (SELECT 1 SETTINGS a=1) SELECT * FROM x', undefined, []],
    ['SELECT 1 SETTINGS a=1 UNION ALL SELECT 2', undefined, []],
    ['SELECT * FROM system.settings', undefined, []],
    ["SHOW SETTINGS LIKE 'max%'", undefined, []],
    ['SELECT format FROM t', undefined, []],
    ['INSERT INTO t (a, b) SETTINGS x = 1 FORMAT CSV\n1,2', 'CSV', [['x', '1']]],
  ])('%j', (sql, format, settings) => {
    expect(trailingFormat(sql)).toBe(format)
    expect(trailingSettings(sql).map((e) => [e.name, e.value])).toEqual(settings)
  })

  it('finds INTO OUTFILE at any depth and case, but not in strings', () => {
    expect(hasIntoOutfile("SELECT 1 INTO OUTFILE 'x'")).toBe(true)
    expect(hasIntoOutfile("select 1 into /* c */ outfile 'x' FORMAT CSV")).toBe(true)
    expect(hasIntoOutfile("SELECT 'INTO OUTFILE'")).toBe(false)
    expect(hasIntoOutfile('SELECT outfile FROM t')).toBe(false)
  })

  it('marks where INSERT data starts', () => {
    const sql = 'INSERT INTO db.t (a) SETTINGS x = 1 FORMAT JSONEachRow {"a":"\'"}'
    const analysis = analyzeStatement(sql)
    expect(sql.slice(analysis.dataStart)).toBe(' {"a":"\'"}')
    expect(analyzeStatement('INSERT INTO t VALUES (1)').dataStart).toBeUndefined()
  })
})

describe('addSettings', () => {
  const add = { defaults: { max_threads: '4' }, overrides: { max_execution_time: 300, readonly: 1 } }
  it.each([
    ['SELECT 1', "SELECT 1 SETTINGS max_threads = '4', max_execution_time = 300, readonly = 1"],
    ['SELECT 1;  -- bye', "SELECT 1 SETTINGS max_threads = '4', max_execution_time = 300, readonly = 1"],
    ['SELECT 1 -- why\n', "SELECT 1 SETTINGS max_threads = '4', max_execution_time = 300, readonly = 1"],
    [
      'select 1 format JSON',
      "select 1 SETTINGS max_threads = '4', max_execution_time = 300, readonly = 1 FORMAT JSON",
    ],
    [
      "SELECT 1 SETTINGS readonly = 0, max_threads = 2 FORMAT JSON SETTINGS log_comment = 'x'",
      "SELECT 1 SETTINGS log_comment = 'x', max_threads = 2, max_execution_time = 300, readonly = 1 FORMAT JSON",
    ],
    [
      'SELECT 1 FORMAT TSV SETTINGS max_threads = 8',
      'SELECT 1 SETTINGS max_threads = 8, max_execution_time = 300, readonly = 1 FORMAT TSV',
    ],
    [
      'SELECT 1 UNION ALL SELECT 2 SETTINGS a = 1',
      "SELECT 1 UNION ALL SELECT 2 SETTINGS max_threads = '4', a = 1, max_execution_time = 300, readonly = 1",
    ],
    [
      'INSERT INTO t FORMAT JSONEachRow\n{"a":1}\n',
      'INSERT INTO t SETTINGS max_threads = \'4\', max_execution_time = 300, readonly = 1 FORMAT JSONEachRow\n{"a":1}\n',
    ],
    [
      'INSERT INTO db.t (a, b) SETTINGS async_insert = 0 VALUES (1, 2)',
      "INSERT INTO db.t (a, b) SETTINGS max_threads = '4', async_insert = 0, max_execution_time = 300, readonly = 1 VALUES (1, 2)",
    ],
    [
      'INSERT INTO t SELECT 1',
      "INSERT INTO t SETTINGS max_threads = '4', max_execution_time = 300, readonly = 1 SELECT 1",
    ],
  ])('%j', (sql, expected) => {
    expect(addSettings(sql, add)).toBe(expected)
  })

  it('renders values safely and refuses bad names and multi-statement text', () => {
    expect(renderSettingValue(3)).toBe('3')
    expect(renderSettingValue(true)).toBe('1')
    expect(renderSettingValue("a'b\\c\nd")).toBe("'a\\'b\\\\c\\nd'")
    expect(addSettings('SELECT 1', { defaults: { log_comment: "x'; DROP TABLE t; --" } })).toBe(
      "SELECT 1 SETTINGS log_comment = 'x\\'; DROP TABLE t; --'",
    )
    expect(() => addSettings('SELECT 1', { defaults: { 'a=1, readonly': '0' } })).toThrow(
      /invalid setting name/,
    )
    expect(() => addSettings('SELECT 1; SELECT 2', add)).toThrow(/more than one statement/)
    expect(addSettings('SELECT 1', {})).toBe('SELECT 1')
  })
})

describe('queryParameterTypes', () => {
  it('reads {name:Type} placeholders outside strings', () => {
    const types = queryParameterTypes(
      "SELECT {a:Array(String)}, { b : Nullable(UInt32) }, '{c:String}' WHERE x IN {d:Map(String, Array(UInt8))}",
    )
    expect([...types]).toEqual([
      ['a', 'Array(String)'],
      ['b', 'Nullable(UInt32)'],
      ['d', 'Map(String, Array(UInt8))'],
    ])
  })
})
