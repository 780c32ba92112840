import { describe, expect, it } from 'vitest'
import { addSettings } from '../../services/sql-port/add-settings.ts'

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
    // After FORMAT is applied first, so the clause in front of FORMAT comes last and wins.
    [
      'SELECT 1 SETTINGS a=1 FORMAT TSV SETTINGS a=2, b=-2',
      "SELECT 1 SETTINGS max_threads = '4', b = -2, a = 1, max_execution_time = 300, readonly = 1 FORMAT TSV",
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
    expect(addSettings('SELECT 1', { defaults: { n: 3, b: true, s: "a'b\\c\nd" } })).toBe(
      "SELECT 1 SETTINGS n = 3, b = 1, s = 'a\\'b\\\\c\\nd'",
    )
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
