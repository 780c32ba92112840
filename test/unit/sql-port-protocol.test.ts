import { describe, expect, it } from 'vitest'
import {
  contentTypeFor,
  decodeQueryParameter,
  errorBody,
  fromEngineError,
  httpStatusForCode,
  splitHttpParams,
  SqlPortError,
} from '../../services/sql-port/clickhouse-protocol.ts'

describe('ClickHouse error mapping', () => {
  it.each([
    [62, 400],
    [27, 400],
    [60, 404],
    [81, 404],
    [73, 404],
    [516, 401],
    [497, 403],
    [229, 413],
    [48, 501],
    [159, 408],
    [164, 500],
    [395, 500],
  ])('code %i → HTTP %i', (code, status) => {
    expect(httpStatusForCode(code)).toBe(status)
  })

  it('unwraps chdb’s nested messages into one ClickHouse error body', () => {
    const nested = Object.assign(
      new Error(
        'Code: 73. DB::Exception: Code: 73. DB::Exception: Unknown format NoSuchFmt. (UNKNOWN_FORMAT) (version 26.7.2.1). (UNKNOWN_FORMAT)',
      ),
      { clickhouseCode: 73 },
    )
    const err = fromEngineError(nested)
    expect([err.code, err.type, err.message]).toEqual([73, 'UNKNOWN_FORMAT', 'Unknown format NoSuchFmt'])
    expect(errorBody(err, '26.7.2.1')).toBe(
      'Code: 73. DB::Exception: Unknown format NoSuchFmt. (UNKNOWN_FORMAT) (version 26.7.2.1)\n',
    )
    const plain = fromEngineError(
      Object.assign(
        new Error('Code: 164. DB::Exception: default: Cannot execute query in readonly mode. (READONLY)'),
        {
          clickhouseCode: 164,
        },
      ),
    )
    expect(errorBody(plain, 'v')).toBe(
      'Code: 164. DB::Exception: default: Cannot execute query in readonly mode. (READONLY) (version v)\n',
    )
    expect(fromEngineError(Object.assign(new Error('bad value'), { code: 'CHDB_BIND' }))).toMatchObject({
      code: 457,
      type: 'BAD_QUERY_PARAMETER',
    })
    expect(fromEngineError(new Error('boom'))).toMatchObject({
      code: 1001,
      type: 'STD_EXCEPTION',
      message: 'boom',
    })
    const own = new SqlPortError(516, 'x')
    expect(fromEngineError(own)).toBe(own)
  })
})

describe('content types', () => {
  it.each([
    ['TabSeparated', 'text/tab-separated-values; charset=UTF-8'],
    ['JSONEachRow', 'application/json; charset=UTF-8'],
    ['CSVWithNames', 'text/csv; charset=UTF-8; header=present'],
    ['CSV', 'text/csv; charset=UTF-8; header=absent'],
    ['RowBinary', 'application/octet-stream'],
    ['Parquet', 'application/octet-stream'],
    ['Pretty', 'text/plain; charset=UTF-8'],
  ])('%s → %s', (format, type) => {
    expect(contentTypeFor(format)).toBe(type)
  })
})

describe('HTTP parameters', () => {
  it('separates ClickHouse’s own parameters, query parameters and settings', () => {
    const http = splitHttpParams(
      new URLSearchParams(
        'query=SELECT+1&query_id=q1&database=db&default_format=JSON&user=u&password=p&param_x=41&session_id=s' +
          '&enable_http_compression=1&http_zlib_compression_level=6&send_progress_in_http_headers=1' +
          '&http_headers_progress_interval_ms=100&max_threads=2&insert_deduplication_token=t&max_threads=3',
      ),
    )
    expect(http).toMatchObject({
      query: 'SELECT 1',
      queryId: 'q1',
      database: 'db',
      defaultFormat: 'JSON',
      enableHttpCompression: true,
      compressionLevel: 6,
    })
    expect([...http.params]).toEqual([['x', '41']])
    expect([...http.settings]).toEqual([
      ['insert_deduplication_token', 't'],
      ['max_threads', '3'],
    ])
    expect(() => splitHttpParams([['compress', '1']])).toThrow(SqlPortError)
  })

  it.each([
    ['41', 'UInt32', '41'],
    ['\\N', 'Nullable(String)', null],
    ["it\\'s", 'String', "it's"],
    ['a\\tb\\\\c', 'String', 'a\tb\\c'],
    ['100\\%', 'String', '100\\%'],
    ['\\xC3\\xA9', 'String', 'é'],
    ["['a\\'b','c']", 'Array(String)', "['a''b','c']"],
    ["['x\\\\y']", 'Array(String)', "['x\\y']"],
    ["{'k\\'':1}", 'Map(String, UInt8)', "{'k''':1}"],
    ["('a\\'b',1)", 'Nullable(Tuple(String, UInt8))', "('a''b',1)"],
    ["it\\'s", undefined, "it's"],
  ])('param %j of type %s → %j', (raw, type, decoded) => {
    expect(decodeQueryParameter(raw, type)).toBe(decoded)
  })
})
