import { randomUUID } from 'node:crypto'
import { existsSync } from 'node:fs'
import { request } from 'node:http'
import { connect } from 'node:net'
import { join } from 'node:path'
import { gunzipSync, gzipSync } from 'node:zlib'
import { ClickHouseError, ClickHouseLogLevel, createClient, type ClickHouseClient } from '@clickhouse/client'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { ChdbAnalystEngine, ReadOnlyRefusal } from '../../services/sql-port/analyst-engine.ts'
import { passwordAuthenticator } from '../../services/sql-port/authentication.ts'
import { startSqlPort, type SqlPortServer } from '../../services/sql-port/sql-port.ts'
import { tempDir } from '../helpers/temp.ts'
import { waitFor } from '../helpers/wait-for.ts'

// The client logs every failed request; these failures are the point of the tests.
const quiet = { level: ClickHouseLogLevel.OFF }
const MB = 1024 * 1024
const LIMITS = { maxExecutionSeconds: 60, maxMemoryBytes: 1024 * MB, maxResultBytes: 128 * MB, maxThreads: 1 }

// The analysts' read-only port in front of the embedded engine (chdb in this test process).
describe('SQL port, read-only, over chdb', () => {
  let store: ChdbStore
  let analysts: ChdbAnalystEngine
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
    analysts = await ChdbAnalystEngine.open(store, LIMITS)
    server = await startSqlPort({
      executor: store,
      host: '127.0.0.1',
      port: 0,
      readOnly: true,
      analysts,
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
    await analysts?.close()
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

  it('runs every statement with readonly=1 and the limits, which no URL setting, SET, SETTINGS clause, subquery or function lifts', async () => {
    const show =
      "SELECT getSetting('readonly'), getSetting('max_execution_time'), getSetting('max_memory_usage'), getSetting('max_result_bytes'), getSetting('max_threads')"
    const limits = `1\t60\t${1024 * MB}\t${128 * MB}\t1\n`
    // A URL `readonly` is ignored (the connection is readonly=1 whatever a client asks).
    const plain = await get(show, { readonly: '0' })
    expect(await plain.text()).toBe(limits)
    // Setting a limit to the value it has changes nothing, and the engine lets it pass.
    const same = await get(`${show} SETTINGS max_execution_time = 60`)
    expect(await same.text()).toBe(limits)

    const lifts: [string, Record<string, string>][] = [
      [show, { max_execution_time: '0' }],
      [show, { max_memory_usage: '0' }],
      [show, { max_result_bytes: '0' }],
      [show, { max_threads: '64' }],
      [`${show} SETTINGS max_execution_time = 0`, {}],
      [`${show} SETTINGS max_memory_usage = 0`, {}],
      [`${show} FORMAT TSV SETTINGS max_result_bytes = 0`, {}],
    ]
    for (const [query, params] of lifts) {
      const res = await get(query, params)
      const text = await res.text()
      expect(res.headers.get('x-clickhouse-exception-code'), query).toBe('164')
      expect(text, query).toMatch(
        /Cannot modify '(max_execution_time|max_memory_usage|max_result_bytes|max_threads)' setting in readonly mode/,
      )
    }
    // A SETTINGS clause inside the statement is applied by the engine without the readonly check,
    // so the port refuses it; SET is not a read-only statement.
    for (const query of [
      "SELECT * FROM (SELECT getSetting('max_execution_time') SETTINGS max_execution_time = 0)",
      "SELECT * FROM view(SELECT getSetting('max_memory_usage') SETTINGS max_memory_usage = 0)",
      "WITH (SELECT getSetting('max_result_bytes') SETTINGS max_result_bytes = 0) AS r SELECT r",
      "SELECT getSetting('max_threads') SETTINGS max_threads = 64 UNION ALL SELECT 1",
      'SELECT 1 WHERE 1 IN (SELECT 1 SETTINGS readonly = 0)',
      'SET max_execution_time = 0',
      "SELECT * FROM eval('SELECT getSetting(''max_execution_time'')')",
    ]) {
      const text = await expectRefused(query)
      expect(text, query).toContain('Cannot execute query in readonly mode')
    }
  })

  it('has the engine refuse, as the last word, each statement the lexer would let through or that reaches outside the engine', async () => {
    const run = (sql: string) =>
      analysts.run({
        sql,
        params: new Map(),
        settings: new Map(),
        database: store.database,
        format: 'TabSeparated',
        signal: new AbortController().signal,
      })
    const outfile = join(dir.path, 'engine-leak.tsv')
    const refused: [string, RegExp][] = [
      ['SELECT 1; DROP TABLE analyst_events', /multi-statements/],
      ['SELECT 1 PARALLEL WITH SELECT 2', /multi-statements/],
      ['DROP TABLE analyst_events', /write data/],
      ["INSERT INTO FUNCTION file('x.tsv') SELECT 1", /write outside the engine/],
      [`SELECT * FROM analyst_events INTO OUTFILE '${outfile}'`, /INTO OUTFILE/],
      ['USE system', /USE, SET/],
      ['SET readonly = 0', /USE, SET/],
      ['KILL QUERY WHERE 1', /USE, SET/],
      ['SYSTEM DROP DNS CACHE', /USE, SET/],
      ["SELECT file('/etc/hostname')", /the file function/],
      ["SELECT `fil\\x65`('/etc/hostname')", /the file function/],
      ["DESCRIBE file('/etc/hostname', 'LineAsString')", /the file function/],
      ["EXPLAIN SELECT * FROM file('/etc/hostname')", /the file function/],
      ["SELECT * FROM (SELECT getSetting('readonly') SETTINGS readonly = 0)", /SETTINGS clause/],
      [
        "SELECT * FROM view(SELECT getSetting('max_execution_time') SETTINGS max_execution_time = 0)",
        /SETTINGS clause/,
      ],
      ["SELECT getSetting('readonly') SETTINGS readonly = 0 UNION ALL SELECT 2", /SETTINGS clause/],
      ["SELECT catboostEvaluate('/tmp/model.bin', 1)", /catboostEvaluate function/],
      ["SELECT * FROM loop(url('http://127.0.0.1:9/x', 'CSV', 'a String'))", /table function/],
    ]
    const reach = [
      "url('http://127.0.0.1:9/x.csv', 'CSV', 'a String')",
      "urlCluster('default', 'http://127.0.0.1:9/x.csv', 'CSV', 'a String')",
      "executable('id', 'TSV', 'a String')",
      "s3('http://127.0.0.1:9/b/x.csv', 'CSV', 'a String')",
      "s3Cluster('default', 'http://127.0.0.1:9/b/x.csv', 'CSV', 'a String')",
      "remote('127.0.0.1:9', system.one)",
      "remoteSecure('127.0.0.1:9', system.one)",
      "cluster('default', system.one)",
      "clusterAllReplicas('default', system.one)",
      "mysql('127.0.0.1:9', 'db', 't', 'u', 'p')",
      "postgresql('127.0.0.1:9', 'db', 't', 'u', 'p')",
      "mongodb('127.0.0.1:9', 'db', 'c', 'u', 'p', 'a String')",
      "redis('127.0.0.1:9', 'k', 'k String')",
      "sqlite('/tmp/x.db', 't')",
      "hdfs('hdfs://127.0.0.1:9/x', 'CSV', 'a String')",
      "jdbc('jdbc:mysql://127.0.0.1:9/db', 't')",
      "odbc('DSN=x', 't')",
      "azureBlobStorage('http://127.0.0.1:9/a', 'c', 'x.csv', 'CSV')",
      "iceberg('http://127.0.0.1:9/b/t')",
      "deltaLake('http://127.0.0.1:9/b/t')",
      "filesystem('/etc')",
      "input('a String')",
      "dictionary('d')",
      "fuzzJSON('{}')",
      "eval('SELECT 1')",
      "mergeTreeIndex('sluice', 'analyst_events')",
      "viewIfPermitted(SELECT 1 ELSE null('a UInt8'))",
    ]
    for (const fn of reach) refused.push([`SELECT * FROM ${fn}`, /table function is not allowed/])
    for (const [sql, why] of refused) {
      const err = await run(sql).catch((e: unknown) => e)
      expect(err, sql).toBeInstanceOf(ReadOnlyRefusal)
      expect((err as ReadOnlyRefusal).why, sql).toMatch(why)
    }
    // Over HTTP, where the lexer lets them through, the engine's refusal is a 164.
    for (const fn of reach) {
      const text = await expectRefused(`SELECT * FROM ${fn}`)
      expect(text, fn).toContain('Cannot execute query in readonly mode: the ')
    }
    expect(existsSync(outfile)).toBe(false)
    // Table functions over the engine's own data, and an unparseable text, which gets the engine's syntax error.
    expect((await run('SELECT sum(number) FROM numbers(4)')).toString()).toBe('6\n')
    expect(
      (await run("SELECT count() FROM (SELECT * FROM generateRandom('a String') LIMIT 3)")).toString(),
    ).toBe('3\n')
    expect((await run('SELECT count() FROM (VALUES (1), (2))')).toString()).toBe('2\n')
    expect((await run("SELECT count() FROM merge('system', '^one$')")).toString()).toBe('1\n')
    const syntax = await run('SELECT 1 +').catch((e: unknown) => e)
    expect(syntax).toMatchObject({ clickhouseCode: 62 })
    expect(String(syntax)).toMatch(/Syntax error: failed at position 11/)
  })

  it('caps each statement’s time, memory and result size in the engine', async () => {
    const tight = await ChdbAnalystEngine.open(store, {
      maxExecutionSeconds: 1,
      maxMemoryBytes: 64 * MB,
      maxResultBytes: MB,
      maxThreads: 1,
    })
    const run = (sql: string) =>
      tight.run({
        sql,
        params: new Map(),
        settings: new Map(),
        database: store.database,
        format: 'TabSeparated',
        signal: new AbortController().signal,
      })
    try {
      const cases: [string, number][] = [
        ['SELECT count() FROM numbers(1000000000000) WHERE NOT ignore(sipHash64(number))', 159],
        ['SELECT length(groupArray(number)) FROM numbers(100000000)', 241],
        ['SELECT number FROM numbers(1000000)', 396],
      ]
      for (const [sql, code] of cases) {
        expect(await run(sql).catch((e: unknown) => e), sql).toMatchObject({ clickhouseCode: code })
      }
      expect((await run('SELECT count() FROM numbers(1000)')).toString()).toBe('1000\n')
    } finally {
      await tight.close()
    }
  })

  it('answers the pipelines’ queries while an analyst’s query runs, and kills that query once its client has gone', async () => {
    const probe = `probe-${randomUUID()}`
    const endless = `SELECT count() FROM numbers(1000000000000) WHERE NOT ignore(sipHash64(number, '${probe}'))`
    let answered = false
    const analyst = request(`${base}/?${new URLSearchParams({ query: endless }).toString()}`, {
      headers: basic('analyst', 's3cret'),
    })
    analyst.on('response', (res) => {
      answered = true
      res.resume()
    })
    analyst.on('error', () => undefined)
    analyst.end()
    const inEngine = () =>
      store.query<{ n: number | string }>(
        'SELECT count() AS n FROM system.processes WHERE query_id != queryID() AND position(query, {probe:String}) > 0',
        { probe },
      )
    await waitFor(inEngine, (rows) => Number(rows[0]?.n) === 1, {
      what: 'the analyst query in system.processes',
    })

    // A bound query on the pipelines' connection, as the public API runs them, completes meanwhile.
    const rows = await store.query<{ id: number }>(
      'SELECT id FROM analyst_events WHERE name = {name:String}',
      {
        name: 'b',
      },
    )
    expect(rows).toEqual([{ id: 2 }])
    expect(answered).toBe(false)

    // The client goes: the engine stops the query long before its 60 s limit, and the port answers.
    analyst.destroy()
    await waitFor(inEngine, (r) => Number(r[0]?.n) === 0, {
      what: 'the abandoned query to leave system.processes',
      timeoutMs: 30_000,
    })
    expect(answered).toBe(false)
    const after = await get('SELECT 1')
    expect(await after.text()).toBe('1\n')
  })

  it('answers 408 and closes connections that send their headers or body too slowly', async () => {
    const slow = await startSqlPort({
      executor: store,
      host: '127.0.0.1',
      port: 0,
      readOnly: true,
      analysts,
      authenticate: passwordAuthenticator({ analyst: 's3cret' }),
      defaultDatabase: store.database,
      headersTimeoutMs: 200,
      requestTimeoutMs: 400,
    })
    const exchange = (bytes: string) =>
      new Promise<string>((resolve) => {
        const socket = connect(slow.port, '127.0.0.1')
        let got = ''
        socket.on('data', (d: Buffer) => (got += d.toString()))
        socket.on('close', () => resolve(got))
        socket.on('error', () => undefined)
        socket.write(bytes)
      })
    const auth = basic('analyst', 's3cret').Authorization
    try {
      expect(await exchange('POST / HTTP/1.1\r\nHost: x\r\nAuthoriz')).toMatch(/^HTTP\/1\.1 408 /)
      expect(
        await exchange(
          `POST / HTTP/1.1\r\nHost: x\r\nAuthorization: ${auth}\r\nContent-Length: 100\r\n\r\nSELECT `,
        ),
      ).toMatch(/^HTTP\/1\.1 408 /)
      // The limits are on receiving the request: a statement that runs longer is answered.
      const res = await fetch(
        `http://127.0.0.1:${slow.port}/?query=${encodeURIComponent('SELECT sleep(1)')}`,
        {
          headers: basic('analyst', 's3cret'),
        },
      )
      expect(await res.text()).toBe('0\n')
    } finally {
      await slow.close()
    }
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
