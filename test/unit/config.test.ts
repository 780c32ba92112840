import { describe, expect, it } from 'vitest'
import { ConfigError, loadConfig } from '../../services/config.ts'

describe('loadConfig', () => {
  it('applies the documented defaults', () => {
    const config = loadConfig({})
    expect(config.PORT).toBe(8080)
    expect(config.SLUICE_DATA_DIR).toBe('./data')
    expect(config.SLUICE_SQL_PORT).toBe(8123)
    expect(config.SLUICE_SQL_HOST).toBe('127.0.0.1')
    expect(config.SLUICE_ADMIN_TOKEN).toBeUndefined()
    expect(config.KAFKA_BROKERS).toBeUndefined()
    expect(config.CLICKHOUSE_URL).toBeUndefined()
    expect(config.SLUICE_UPLOAD_MAX_BYTES).toBe(256 * 1024)
    expect(config.SLUICE_UPLOAD_RATE_PER_KEY).toBe(150)
    expect(config.SLUICE_PROFILE_RATE_PER_CUSTOMER_PER_MIN).toBe(15)
  })

  it('parses lists and numbers from strings', () => {
    const config = loadConfig({
      PORT: '9000',
      KAFKA_BROKERS: 'a:9092, b:9092,',
      CLICKHOUSE_URL: 'http://ch:8123',
      SLUICE_ADMIN_TOKEN: 'x'.repeat(20),
    })
    expect(config.PORT).toBe(9000)
    expect(config.KAFKA_BROKERS).toEqual(['a:9092', 'b:9092'])
    expect(config.CLICKHOUSE_URL).toBe('http://ch:8123')
    expect(config.SLUICE_ADMIN_TOKEN).toBe('x'.repeat(20))
  })

  it('reads the auth and SDK upload limits', () => {
    const defaults = loadConfig({})
    expect(defaults.SLUICE_SDK_UPLOAD_RATE_PER_APP).toBe(1000)
    expect(defaults.SLUICE_AUTH_FAILURES_PER_ADDRESS_PER_MIN).toBe(600)
    expect(defaults.SLUICE_TRUSTED_PROXIES).toEqual([])
    const config = loadConfig({ SLUICE_TRUSTED_PROXIES: '10.0.0.0/8, 192.0.2.1,fd00::/8' })
    expect(config.SLUICE_TRUSTED_PROXIES).toEqual(['10.0.0.0/8', '192.0.2.1', 'fd00::/8'])
  })

  it('reads the SQL port limits', () => {
    const defaults = loadConfig({})
    expect([
      defaults.SLUICE_SQL_MAX_EXECUTION_SECONDS,
      defaults.SLUICE_SQL_MAX_MEMORY_BYTES,
      defaults.SLUICE_SQL_MAX_RESULT_BYTES,
      defaults.SLUICE_SQL_MAX_THREADS,
      defaults.SLUICE_SQL_MAX_CONCURRENT_QUERIES,
      defaults.SLUICE_SQL_HEADERS_TIMEOUT_MS,
      defaults.SLUICE_SQL_REQUEST_TIMEOUT_MS,
    ]).toEqual([60, 1024 ** 3, 128 * 1024 ** 2, 1, 2, 10_000, 30_000])
    const config = loadConfig({
      SLUICE_SQL_MAX_EXECUTION_SECONDS: '300',
      SLUICE_SQL_MAX_MEMORY_BYTES: '4294967296',
    })
    expect([config.SLUICE_SQL_MAX_EXECUTION_SECONDS, config.SLUICE_SQL_MAX_MEMORY_BYTES]).toEqual([
      300,
      4 * 1024 ** 3,
    ])
  })

  it('reads the TLS files as a pair, and the plain-HTTP switch', () => {
    expect(loadConfig({}).SLUICE_ALLOW_PLAIN_HTTP).toBe(false)
    expect(loadConfig({ SLUICE_ALLOW_PLAIN_HTTP: '1' }).SLUICE_ALLOW_PLAIN_HTTP).toBe(true)
    const tls = loadConfig({ SLUICE_TLS_CERT: '/etc/sluice/cert.pem', SLUICE_TLS_KEY: '/etc/sluice/key.pem' })
    expect([tls.SLUICE_TLS_CERT, tls.SLUICE_TLS_KEY]).toEqual(['/etc/sluice/cert.pem', '/etc/sluice/key.pem'])
    expect(() => loadConfig({ SLUICE_TLS_CERT: '/etc/sluice/cert.pem' })).toThrow(
      /SLUICE_TLS_CERT and SLUICE_TLS_KEY/,
    )
    expect(() => loadConfig({ SLUICE_TLS_KEY: '/etc/sluice/key.pem' })).toThrow(/set both/)
  })

  it('reads the ClickHouse cluster name, which needs a ClickHouse server', () => {
    const url = 'http://clickhouse:8123'
    expect(loadConfig({ CLICKHOUSE_URL: url }).CLICKHOUSE_CLUSTER).toBeUndefined()
    expect(loadConfig({ CLICKHOUSE_URL: url, CLICKHOUSE_CLUSTER: 'sluice_cluster' }).CLICKHOUSE_CLUSTER).toBe(
      'sluice_cluster',
    )
    expect(() => loadConfig({ CLICKHOUSE_CLUSTER: 'sluice_cluster' })).toThrow(
      /CLICKHOUSE_CLUSTER: needs CLICKHOUSE_URL/,
    )
    expect(() => loadConfig({ CLICKHOUSE_URL: url, CLICKHOUSE_CLUSTER: 'a b' })).toThrow(
      /CLICKHOUSE_CLUSTER="a b": must be a plain identifier/,
    )
  })

  it('treats empty strings as unset', () => {
    const config = loadConfig({ KAFKA_BROKERS: '', CLICKHOUSE_URL: ' ', SLUICE_ADMIN_TOKEN: '' })
    expect(config.KAFKA_BROKERS).toBeUndefined()
    expect(config.CLICKHOUSE_URL).toBeUndefined()
    expect(config.SLUICE_ADMIN_TOKEN).toBeUndefined()
  })

  it.each([
    ['PORT', 'eighty'],
    ['PORT', '70000'],
    ['SLUICE_SQL_PORT', '-1'],
    ['CLICKHOUSE_URL', 'not a url'],
    ['SLUICE_ADMIN_TOKEN', 'short'],
    ['SLUICE_UPLOAD_RATE_PER_KEY', '0'],
    ['CLICKHOUSE_DATABASE', 'drop table;'],
    ['SLUICE_LOG_LEVEL', 'loud'],
    ['SLUICE_SDK_UPLOAD_RATE_PER_APP', '0'],
    ['SLUICE_AUTH_FAILURES_PER_ADDRESS_PER_MIN', '-1'],
    ['SLUICE_TRUSTED_PROXIES', 'proxy.internal'],
    ['SLUICE_TRUSTED_PROXIES', '10.0.0.0/33'],
    ['SLUICE_ALLOW_PLAIN_HTTP', 'yes'],
    ['SLUICE_SQL_MAX_EXECUTION_SECONDS', '0'],
    ['SLUICE_SQL_MAX_MEMORY_BYTES', 'lots'],
    ['SLUICE_SQL_MAX_CONCURRENT_QUERIES', '0'],
  ])('rejects %s=%s with a message naming the variable', (name, value) => {
    expect(() => loadConfig({ [name]: value })).toThrow(ConfigError)
    expect(() => loadConfig({ [name]: value })).toThrow(new RegExp(`${name}=`))
  })
})
