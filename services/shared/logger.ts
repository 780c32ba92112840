import pino, { type DestinationStream, type Logger } from 'pino'

export type { Logger }

/**
 * Fields that hold credentials, wherever a log call puts them (a push transport's settings, a
 * request's headers): censored by pino before a line is written, so no secret reaches a log.
 */
export const REDACTED_PATHS = [
  'secret',
  '*.secret',
  'api_secret',
  '*.api_secret',
  'private_key',
  '*.private_key',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'settings.key',
  '*.settings.key',
  'settings.secret',
  '*.settings.secret',
  'settings.service_account',
  '*.settings.service_account',
  'service_account',
  '*.service_account',
]

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = {
    name: 'sluice',
    level,
    base: { pid: process.pid },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  }
  return destination ? pino(options, destination) : pino(options)
}
