import { describe, expect, it } from 'vitest'
import {
  engineAtLeast,
  loadMigrations,
  splitStatements,
  statementGuards,
} from '../../pipelines/connectors/store/migrations.ts'

describe('migrations', () => {
  it('splits a file into statements, dropping comment lines', () => {
    const sql = `-- header\nCREATE TABLE a (x UInt8)\nENGINE = Memory;\n\n-- next\nCREATE TABLE b (y String) ENGINE = Memory;\n`
    expect(splitStatements(sql)).toEqual([
      'CREATE TABLE a (x UInt8)\nENGINE = Memory',
      'CREATE TABLE b (y String) ENGINE = Memory',
    ])
  })

  it('loads the numbered migrations in order, each with statements', async () => {
    const migrations = await loadMigrations()
    expect(migrations.length).toBeGreaterThan(0)
    expect(migrations[0]?.name).toBe('001_control')
    const versions = migrations.map((m) => m.version)
    expect(versions).toEqual([...versions].sort((a, b) => a - b))
    for (const m of migrations) {
      expect(m.statements.length).toBeGreaterThan(0)
      expect(m.checksum).toMatch(/^[0-9a-f]{64}$/)
      for (const s of m.statements) expect(s).toMatch(/^(CREATE|ALTER|INSERT|DROP)\b/)
    }
  })

  it('reads the engine version a statement needs from the comment line right before it', () => {
    const sql = [
      '-- header',
      'ALTER TABLE a MODIFY SETTING x = 1;',
      '-- engine >= 26.1',
      'ALTER TABLE a ADD PROJECTION p',
      '(SELECT 1);',
      '-- why it runs last',
      '--   engine >= 25.3',
      'ALTER TABLE a MATERIALIZE PROJECTION p;',
      'DROP TABLE b;',
    ].join('\n')
    expect(splitStatements(sql)).toHaveLength(4)
    expect(statementGuards(sql)).toEqual({ 1: [26, 1], 2: [25, 3] })
    expect(engineAtLeast([26, 7], [26, 1])).toBe(true)
    expect(engineAtLeast([26, 1], [26, 1])).toBe(true)
    expect(engineAtLeast([25, 8], [26, 1])).toBe(false)
    expect(engineAtLeast([27, 0], [26, 1])).toBe(true)
  })

  it("marks the rollup's daily projection as needing ClickHouse 26.1 (per-projection granules)", async () => {
    const m = (await loadMigrations()).find((x) => x.version === 36)!
    expect(m.statements[0]).toMatch(/MODIFY SETTING deduplicate_merge_projection_mode = 'rebuild'$/)
    expect(m.needs).toEqual({ 1: [26, 1], 2: [26, 1] })
    expect(m.statements[1]).toContain('WITH SETTINGS (index_granularity = 128)')
  })
})
