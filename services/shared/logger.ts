import pino, { type Logger } from 'pino'

export type { Logger }

export function createLogger(level: string, name = 'sluice'): Logger {
  return pino({ name, level, base: { pid: process.pid } })
}
