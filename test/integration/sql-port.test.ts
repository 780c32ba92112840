import { existsSync } from 'node:fs'
import { request } from 'node:http'
import { join } from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import { ClickHouseError, ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { passwordAuthenticator, startSqlPort, type SqlPortServer } from '../../services/sql-port/sql-port.ts'
import { tempDir } from '../helpers/temp.ts'

// The client logs every failed request; these failures are the point of the tests.
const quiet = { level: ClickHouseLogLevel.OFF }

// The analysts' read-only port in front of the embedded engine (chdb in this test process).
describe('SQL port, read-only, over chdb', () => {
  let store: ChdbStore
  let server: SqlPortServer
  let base: string
  let client: ClickHouseClient
  let dir: { path: string; cleanup: () => Promise<void> }

  const basic = (user: string, password: string) => ({
    Authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
  })
  const get = (query: string, extra: Record<string, string> = {}, headers: Record<string, string> = {}) =>
    fetch(`${base}/?${new URLSearchParams({ query, ...extra }).toString()}`, { headers })
  const post = (
    body: string | Buffer,
    extra: Record<string, string> = {},
    headers: Record<string, string> = {},
  ) => fetch(`${base}/?${new URLSearchParams(extra).toString()}`, { method: 'POST', body, headers })
  const ids = async () =>
    (await store.query<{ id: number }>('SELECT id FROM analyst_events ORDER BY id')).map((r) => r.id)

  async function expectRefused(query: string, code = 164, type = 'READONLY'): Promise<string> {
    const res = await post(query)
    const text = await res.text()
    expect(res.headers.get('x-clickhouse-exception-code'), text).toBe(String(code))
    expect(text).toMatch(new RegExp(`^Code: ${code}\\. DB::Exception: .*\\(${type}\\) \\(version 26\\.`, 's'))
    return text
  }

  beforeAll(async () => {
    dir = await tempDir('sql-port')
    store = await ChdbStore.open(join(dir.path, 'clickhouse'))
    await store.command(
      'CREATE TABLE analyst_events (id UInt32, name String, n UInt64) ENGINE = MergeTree ORDER BY id',
    )
    await store.insert('analyst_events', [
      { id: 1, name: "o'brien", n: '10' },
      { id: 2, name: 'b', n: '20' },
      { id: 3, name: 'c;d\\e', n: '30' },
    ])
    server = await startSqlPort({
      executor: store,
      host: '127.0.0.1',
      port: 0,
      readOnly: true,
      authenticate: passwordAuthenticator({ default: '', analyst: 's3cret' }),
      defaultDatabase: store.database,
    })
    base = `http://127.0.0.1:${server.port}`
    client = createClient({
      url: base,
      username: 'analyst',
      password: 's3cret',
      database: store.database,
      log: quiet,
    })
  })

  afterAll(async () => {
    await client?.close()
    await server?.close()
    await store?.close()
    await dir?.cleanup()
  })

  it('answers /ping and a bare GET / with Ok.', async () => {
    for (const path of ['/ping', '/']) {
      const res = await fetch(`${base}${path}`)
      expect(res.status).toBe(200)
      expect(await res.text()).toBe('Ok.\n')
    }
  })

  it('serves @clickhouse/client queries with JSONEachRow and query parameters', async () => {
    const rs = await client.query({
      query:
        'SELECT id, name, n FROM analyst_events WHERE id >= {min:UInt32} AND name != {skip:String} ORDER BY id',
      format: 'JSONEachRow',
      query_params: { min: 1, skip: 'b' },
    })
    expect(await rs.json()).toEqual([
      { id: 1, name: "o'brien", n: 10 },
      { id: 3, name: 'c;d\\e', n: 30 },
    ])
    // Escaped quotes and backslashes inside an Array parameter survive the trip through chdb's bind.
    const byName = await client.query({
      query: 'SELECT id FROM analyst_events WHERE name IN {names:Array(String)} ORDER BY id',
      format: 'JSONEachRow',
      query_params: { names: ["o'brien", 'c;d\\e'] },
    })
    expect(await byName.json()).toEqual([{ id: 1 }, { id: 3 }])
    expect(await client.ping()).toEqual({ success: true })
  })

  it('answers a curl-style GET /?query= with TabSeparated and ClickHouse headers', async () => {
    const res = await get('SELECT 1', { query_id: 'q-fixed-1' })
    expect(res.status).toBe(200)
    expect(await res.text()).toBe('1\n')
    expect(res.headers.get('content-type')).toBe('text/tab-separated-values; charset=UTF-8')
    expect(res.headers.get('x-clickhouse-format')).toBe('TabSeparated')
    expect(res.headers.get('x-clickhouse-query-id')).toBe('q-fixed-1')
    expect(res.headers.get('x-clickhouse-timezone')).toMatch(/UTC/)
    expect(JSON.parse(res.headers.get('x-clickhouse-summary') ?? '{}')).toMatchObject({ read_rows: '0' })
  })

  it('takes the query from a POST body, and binds param_ values given in text form', async () => {
    const res = await post('SELECT count() FROM analyst_events')
    expect(await res.text()).toBe('3\n')
    const bound = await post('SELECT {x:UInt32} + 1, {s:String}', { param_x: '41', param_s: "it\\'s\\ta" })
    expect(await bound.text()).toBe("42\tit\\'s\\ta\n")
    const semicolonInString = await get("SELECT 'a;b' -- ; DROP TABLE analyst_events")
    expect(await semicolonInString.text()).toBe('a;b\n')
  })

  it('accepts Basic auth, X-ClickHouse-User/Key headers and user/password parameters', async () => {
    const viaBasic = await get('SELECT currentUser() IS NOT NULL', {}, basic('analyst', 's3cret'))
    expect([viaBasic.status, await viaBasic.text()]).toEqual([200, '1\n'])
    const viaHeaders = await get(
      'SELECT 2',
      {},
      { 'X-ClickHouse-User': 'analyst', 'X-ClickHouse-Key': 's3cret' },
    )
    expect([viaHeaders.status, await viaHeaders.text()]).toEqual([200, '2\n'])
    const viaParams = await get('SELECT 3', { user: 'analyst', password: 's3cret' })
    expect([viaParams.status, await viaParams.text()]).toEqual([200, '3\n'])
  })

  it('answers a wrong password with 401 and a Code 516 body, which the client maps to ClickHouseError', async () => {
    const res = await get('SELECT 1', {}, basic('analyst', 'wrong'))
    expect(res.status).toBe(401)
    expect(res.headers.get('x-clickhouse-exception-code')).toBe('516')
    expect(await res.text()).toMatch(
      /^Code: 516\. DB::Exception: analyst: Authentication failed: password is incorrect, or there is no user with such name\. \(AUTHENTICATION_FAILED\) \(version 26\.[\d.]+\)\n$/,
    )
    const unknownUser = await get('SELECT 1', {}, { 'X-ClickHouse-User': 'mallory', 'X-ClickHouse-Key': '' })
    expect(unknownUser.status).toBe(401)

    const wrong = createClient({ url: base, username: 'analyst', password: 'nope', log: quiet })
    try {
      const err = await wrong.query({ query: 'SELECT 1' }).catch((e: unknown) => e)
      expect(err).toBeInstanceOf(ClickHouseError)
      expect(err).toMatchObject({ code: '516', type: 'AUTHENTICATION_FAILED' })
    } finally {
      await wrong.close()
    }
  })

  it('refuses writes, multi-statements, file access and INTO OUTFILE with 164, leaving the data as it was', async () => {
    const outfile = join(dir.path, 'leak.tsv')
    const refused = [
      'CREATE TABLE t_new (a UInt8) ENGINE = Memory',
      "INSERT INTO analyst_events VALUES (9, 'x', 9)",
      'DROP TABLE analyst_events',
      'TRUNCATE TABLE analyst_events',
      'ALTER TABLE analyst_events DELETE WHERE 1',
      'SELECT 1; DROP TABLE analyst_events',
      'SELECT 1 FORMAT JSON;  DROP TABLE analyst_events',
      // The engine reads `--` after hex 0x1e as a comment, so the DROP is a second statement.
      "SELECT 0x1e--'\n; DROP TABLE analyst_events; --'",
      "SELECT 1 // '\n; DROP TABLE analyst_events; --'",
      "SELECT * FROM file('/etc/hostname', 'LineAsString')",
      "SELECT file('/etc/hostname')",
      "DESCRIBE file('/etc/hostname', 'CSVWithNames')",
      "SELECT * FROM (SELECT * FROM file('/etc/hostname', 'LineAsString') SETTINGS readonly = 0)",
      'SELECT 1 SETTINGS readonly = 0 UNION ALL SELECT 2',
      `SELECT * FROM analyst_events INTO OUTFILE '${outfile}'`,
      'SET readonly = 0',
      'USE system',
      'SYSTEM DROP DNS CACHE',
    ]
    for (const query of refused) {
      const text = await expectRefused(query)
      expect(text, query).toContain('Cannot execute query in readonly mode')
    }
    // Table functions that reach files or the network are refused by the engine itself (readonly=1).
    await expectRefused("SELECT * FROM url('http://127.0.0.1:9/x.csv', 'CSV', 'a String')")
    await expectRefused("SELECT * FROM s3('http://127.0.0.1:9/bucket/x.csv', 'CSV', 'a String')")
    // A setting that names a server file is refused before it reaches the engine.
    const template = await get('SELECT 1', { format_template_resultset: '/etc/passwd' })
    expect(template.headers.get('x-clickhouse-exception-code')).toBe('164')
    await template.text()
    // Escapes in quoted names are read as the engine reads them: `fil\x65` is file.
    await expectRefused("SELECT `fil\\x65`('/etc/hostname')")
    await expectRefused("SELECT 1 SETTINGS `format_template_r\\x65sultset` = '/etc/passwd' FORMAT Template")

    expect(existsSync(outfile)).toBe(false)
    expect(await ids()).toEqual([1, 2, 3])
    const tables = await store.query<{ name: string }>(
      'SELECT name FROM system.tables WHERE database = currentDatabase() ORDER BY name',
    )
    expect(tables.map((t) => t.name)).toEqual(['analyst_events'])

    const viaClient = await client.command({ query: 'DROP TABLE analyst_events' }).catch((e: unknown) => e)
    expect(viaClient).toBeInstanceOf(ClickHouseError)
    expect(viaClient).toMatchObject({ code: '164', type: 'READONLY' })
  })

  it('runs every statement with readonly=1 as its last setting, after the URL settings', async () => {
    const res = await get(
      "SELECT getSetting('readonly'), getSetting('max_threads'), getSetting('max_execution_time')",
      {
        max_threads: '3',
        readonly: '0',
      },
    )
    expect(await res.text()).toBe('1\t3\t300\n')
    const own = await get("SELECT getSetting('max_threads') SETTINGS max_threads = 2", { max_threads: '3' })
    expect(await own.text()).toBe('2\n')
  })

  it('honours default_format and the statement’s own FORMAT clause', async () => {
    const eachRow = await get('SELECT id, name FROM analyst_events WHERE id < 3 ORDER BY id', {
      default_format: 'JSONEachRow',
    })
    expect(eachRow.headers.get('x-clickhouse-format')).toBe('JSONEachRow')
    expect(eachRow.headers.get('content-type')).toBe('application/json; charset=UTF-8')
    expect(await eachRow.text()).toBe('{"id":1,"name":"o\'brien"}\n{"id":2,"name":"b"}\n')

    const json = await post('SELECT id, n FROM analyst_events ORDER BY id DESC LIMIT 2 FORMAT JSON')
    expect(json.headers.get('x-clickhouse-format')).toBe('JSON')
    const doc = (await json.json()) as {
      meta: { name: string; type: string }[]
      data: unknown[]
      rows: number
    }
    expect(doc.meta).toEqual([
      { name: 'id', type: 'UInt32' },
      { name: 'n', type: 'UInt64' },
    ])
    expect(doc.data).toEqual([
      { id: 3, n: 30 },
      { id: 2, n: 20 },
    ])
    expect(doc.rows).toBe(2)
  })

  it('runs within the database= parameter and returns the session to its own database', async () => {
    const res = await get('SELECT dummy, currentDatabase() FROM one', { database: 'system' })
    expect(await res.text()).toBe('0\tsystem\n')
    const failed = await get('SELECT * FROM no_such_table', { database: 'system' })
    expect(failed.status).toBe(404)
    await failed.text()
    const after = await get('SELECT currentDatabase()')
    expect(await after.text()).toBe(`${store.database}\n`)
    expect(await store.query('SELECT currentDatabase() AS db')).toEqual([{ db: store.database }])
    const invalid = await get('SELECT 1', { database: 'system; DROP' })
    expect(invalid.headers.get('x-clickhouse-exception-code')).toBe('36')
    await invalid.text()
  })

  it('maps an unknown table to ClickHouseError 60 in the client, and HTTP 404', async () => {
    const err = await client.query({ query: 'SELECT * FROM no_such_table' }).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(ClickHouseError)
    expect(err).toMatchObject({ code: '60', type: 'UNKNOWN_TABLE' })
    const res = await get('SELECT * FROM no_such_table')
    expect(res.status).toBe(404)
    expect(await res.text()).toMatch(
      /^Code: 60\. DB::Exception: Unknown table .*\(UNKNOWN_TABLE\) \(version 26\./,
    )
    const syntax = await get('SELECT 1 +')
    expect([syntax.status, syntax.headers.get('x-clickhouse-exception-code')]).toEqual([400, '62'])
    await syntax.text()
  })

  it('gzips the response when asked, and reads gzipped request bodies', async () => {
    const raw = await new Promise<{ headers: Record<string, unknown>; body: Buffer }>((resolve, reject) => {
      const params = new URLSearchParams({
        query: 'SELECT number FROM numbers(3)',
        enable_http_compression: '1',
      })
      const req = request(
        `${base}/?${params.toString()}`,
        { headers: { 'Accept-Encoding': 'gzip' } },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }))
        },
      )
      req.on('error', reject)
      req.end()
    })
    expect(raw.headers['content-encoding']).toBe('gzip')
    expect(gunzipSync(raw.body).toString()).toBe('0\n1\n2\n')

    const compressed = createClient({
      url: base,
      username: 'analyst',
      password: 's3cret',
      compression: { response: true, request: true },
      log: quiet,
    })
    try {
      const rs = await compressed.query({
        query: 'SELECT id FROM analyst_events ORDER BY id',
        format: 'JSONEachRow',
      })
      expect(await rs.json()).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }])
    } finally {
      await compressed.close()
    }

    const gz = await post(gzipSync('SELECT 40 + 2'), {}, { 'Content-Encoding': 'gzip' })
    expect(await gz.text()).toBe('42\n')
  })

  it('refuses a body over the limit with 413 and keeps serving', async () => {
    const big = await post(`SELECT '${'x'.repeat(1024 * 1024 + 10)}'`)
    expect(big.status).toBe(413)
    expect(big.headers.get('x-clickhouse-exception-code')).toBe('229')
    expect(await big.text()).toMatch(/^Code: 229\. .*\(QUERY_IS_TOO_LARGE\)/)
    // A small gzip body that inflates past the limit is cut off while it is being decoded.
    const bomb = await post(gzipSync(Buffer.alloc(8 * 1024 * 1024, 0x20)), {}, { 'Content-Encoding': 'gzip' })
    expect([bomb.status, bomb.headers.get('x-clickhouse-exception-code')]).toEqual([413, '229'])
    await bomb.text()
    const res = await get('SELECT 1')
    expect(await res.text()).toBe('1\n')
  })

  it('keeps serving after errors and refusals', async () => {
    for (const query of ['SELECT throwIf(1)', 'DROP TABLE analyst_events', 'SELECT * FROM nope']) {
      const res = await post(query)
      expect(res.status).toBeGreaterThanOrEqual(400)
      await res.text()
    }
    const rs = await client.query({
      query: 'SELECT sum(n) AS total FROM analyst_events',
      format: 'JSONEachRow',
    })
    expect(await rs.json()).toEqual([{ total: 60 }])
  })
})
