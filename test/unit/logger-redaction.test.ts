import { describe, expect, it } from 'vitest'
import { createLogger } from '../../services/shared/logger.ts'

describe('logger redaction', () => {
  it('never writes transport credentials or authorization headers', () => {
    const lines: string[] = []
    const logger = createLogger('info', { write: (line: string) => void lines.push(line) })
    const settings = {
      url: 'https://hooks.example/x',
      secret: 'whsec-super-secret-value',
      key: '-----BEGIN PRIVATE KEY-----abc',
      service_account: { client_email: 'a@b.c', private_key: '-----BEGIN PRIVATE KEY-----rsa' },
    }
    logger.info({ settings }, 'transport configured')
    logger.info({ config: { kind: 'webhook', settings } }, 'nested')
    logger.info({ headers: { authorization: 'Bearer ya29.token' }, secret: 'top-level-secret' }, 'request')
    const text = lines.join('')
    for (const leaked of ['whsec-super-secret-value', 'BEGIN PRIVATE KEY', 'ya29.token', 'top-level-secret'])
      expect(text).not.toContain(leaked)
    expect(text).toContain('https://hooks.example/x')
    expect(JSON.parse(lines[0]!)).toMatchObject({
      settings: { url: 'https://hooks.example/x', secret: '[redacted]' },
    })
  })
})
