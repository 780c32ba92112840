import { describe, expect, it } from 'vitest'
import { isDeniedReadOnlySetting, readOnlyRefusal } from '../../services/sql-port/read-only-first-pass.ts'
import { analyzeStatement } from '../../services/sql-port/statement-analysis.ts'

describe('read-only policy', () => {
  it.each([
    ['SELECT 1', undefined],
    ['(SELECT 1)', undefined],
    ["WITH 1 AS x SELECT x SETTINGS max_threads = 2 FORMAT JSON SETTINGS log_comment = 'a'", undefined],
    ['SHOW TABLES', undefined],
    ['DESCRIBE TABLE events', undefined],
    ['DESCRIBE (SELECT 1)', undefined],
    ['EXISTS TABLE events', undefined],
    ["SELECT * FROM events WHERE name = 'file(x)'", undefined],
    ['INSERT INTO t VALUES (1)', /only SELECT/],
    ['SET readonly = 0', /only SELECT/],
    ['OPTIMIZE TABLE t', /only SELECT/],
    ["SELECT file('/etc/passwd')", /file function/],
    ["SELECT `file`('/etc/passwd')", /file function/],
    ["SELECT * FROM FILE('/etc/passwd')", /file function/],
    ["SELECT `fil\\x65`('/etc/passwd')", /file function/],
    ['SELECT "fi\\x6ce"(\'/etc/passwd\')', /file function/],
    ["DESC file('/etc/passwd', 'CSVWithNames')", /file function/],
    ["DESC s3('http://x/bucket/f.csv')", /table function/],
    ["DESCRIBE TABLE url('http://x', 'CSV')", /table function/],
    ['SELECT * FROM (SELECT 1 SETTINGS readonly = 0)', /SETTINGS clause/],
    ['SELECT 1 SETTINGS readonly = 0 UNION ALL SELECT 2', /SETTINGS clause/],
    ["SELECT 1 INTO OUTFILE '/tmp/x'", /INTO OUTFILE/],
  ])('%j', (sql, refusal) => {
    const why = readOnlyRefusal(analyzeStatement(sql))
    if (refusal === undefined) expect(why).toBeUndefined()
    else expect(why).toMatch(refusal)
  })

  it('denies settings that name server files', () => {
    for (const name of ['format_schema', 'format_template_resultset', 'output_format_schema', 'allow_ddl']) {
      expect(isDeniedReadOnlySetting(name), name).toBe(true)
    }
    for (const name of [
      'max_threads',
      'output_format_json_quote_64bit_integers',
      'date_time_output_format',
    ]) {
      expect(isDeniedReadOnlySetting(name), name).toBe(false)
    }
  })
})
