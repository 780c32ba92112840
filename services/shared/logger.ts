import pino, { type DestinationStream, type Logger } from 'pino'

export type { Logger }

export function createLogger(level: string, destination?: DestinationStream): Logger {
  const options = { name: 'sluice', level, base: { pid: process.pid } }
  return destination ? pino(options, destination) : pino(options)
}
