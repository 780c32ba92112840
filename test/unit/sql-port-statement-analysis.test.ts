import { describe, expect, it } from 'vitest'
import { analyzeStatement, queryParameterTypes } from '../../services/sql-port/statement-analysis.ts'

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
    expect(analyzeStatement(sql).multiStatement).toBe(multi)
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
    expect(analyzeStatement(sql).kind).toBe(kind)
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
    // The clause in front of FORMAT, then the one after it (add-settings applies them the other way round).
    [
      'SELECT 1 SETTINGS a=1 FORMAT TSV SETTINGS b=-2',
      'TSV',
      [
        ['a', '1'],
        ['b', '-2'],
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
    const analysis = analyzeStatement(sql)
    expect(analysis.format?.name).toBe(format)
    expect(analysis.settings.flatMap((c) => c.entries).map((e) => [e.name, e.value])).toEqual(settings)
  })

  it('finds INTO OUTFILE at any depth and case, but not in strings', () => {
    expect(analyzeStatement("SELECT 1 INTO OUTFILE 'x'").intoOutfile).toBe(true)
    expect(analyzeStatement("select 1 into /* c */ outfile 'x' FORMAT CSV").intoOutfile).toBe(true)
    expect(analyzeStatement("SELECT 'INTO OUTFILE'").intoOutfile).toBe(false)
    expect(analyzeStatement('SELECT outfile FROM t').intoOutfile).toBe(false)
  })

  it('marks where INSERT data starts', () => {
    const sql = 'INSERT INTO db.t (a) SETTINGS x = 1 FORMAT JSONEachRow {"a":"\'"}'
    const analysis = analyzeStatement(sql)
    expect(sql.slice(analysis.dataStart)).toBe(' {"a":"\'"}')
    expect(analyzeStatement('INSERT INTO t VALUES (1)').dataStart).toBeUndefined()
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
