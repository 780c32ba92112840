import { describe, expect, it } from 'vitest'
import { loadMigrations, splitStatements } from '../../pipelines/connectors/store/migrations.ts'

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
})
