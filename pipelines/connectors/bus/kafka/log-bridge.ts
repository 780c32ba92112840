/** The adapter's log lines and kafkajs' own, through one sink (a pino logger fits) and one threshold. */
import { logLevel as KafkaLogLevel, type LogEntry, type logCreator } from 'kafkajs'

export type LogLevelName = 'error' | 'warn' | 'info' | 'debug'
export type KafkaBusLogLevel = 'silent' | 'fatal' | LogLevelName | 'trace'
/** The subset of a pino logger the adapter uses. */
export type KafkaBusLogger = Record<LogLevelName, (fields: Record<string, unknown>, message: string) => void>

const LEVEL_NUMBERS: Record<KafkaBusLogLevel, KafkaLogLevel> = {
  silent: KafkaLogLevel.NOTHING,
  fatal: KafkaLogLevel.ERROR,
  error: KafkaLogLevel.ERROR,
  warn: KafkaLogLevel.WARN,
  info: KafkaLogLevel.INFO,
  debug: KafkaLogLevel.DEBUG,
  trace: KafkaLogLevel.DEBUG,
}

type LogSink = (level: LogLevelName, message: string, fields: Record<string, unknown>) => void

const stderrSink: LogSink = (level, message, fields) => {
  process.stderr.write(JSON.stringify({ level, time: Date.now(), msg: message, ...fields }) + '\n')
}

export class LogBridge {
  /** The threshold as kafkajs numbers it, for the client's own logLevel. */
  readonly kafkaLevel: KafkaLogLevel
  private readonly sink: LogSink

  /** Without a logger, JSON lines go to stderr; the threshold defaults to 'warn'. */
  constructor(logger: KafkaBusLogger | undefined, logLevel: KafkaBusLogLevel = 'warn') {
    this.sink =
      logger === undefined
        ? stderrSink
        : (level, message, fields) => logger[level]({ component: 'kafka-bus', ...fields }, message)
    this.kafkaLevel = LEVEL_NUMBERS[logLevel]
  }

  /** A line of the adapter's own. */
  log(level: LogLevelName, message: string, fields: Record<string, unknown> = {}): void {
    if (this.kafkaLevel < levelNumber(level)) return
    this.sink(level, `kafka bus: ${message}`, fields)
  }

  /** kafkajs' logCreator: its lines reach the same sink. */
  readonly logCreator: logCreator = () => {
    const sink = this.sink
    const configured = this.kafkaLevel
    return ({ namespace, level, log }: LogEntry) => {
      const { message, timestamp: _t, logger: _l, ...fields } = log
      // kafkajs logs every error response at ERROR, routine ones too (a rebalance in progress, a
      // leader moving); the same error reaches the code that made the request, which handles it.
      const routine =
        namespace === 'Connection' && level === KafkaLogLevel.ERROR && message.startsWith('Response ')
      const effective = routine ? KafkaLogLevel.INFO : level
      if (effective > configured) return
      sink(levelName(effective), `kafkajs ${namespace}: ${message}`, fields)
    }
  }
}

export function errorMessage(err: unknown): string {
  if (err instanceof Error) return `${err.name}: ${err.message}`
  return String(err)
}

function levelName(level: KafkaLogLevel): LogLevelName {
  switch (level) {
    case KafkaLogLevel.ERROR:
    case KafkaLogLevel.NOTHING:
      return 'error'
    case KafkaLogLevel.WARN:
      return 'warn'
    case KafkaLogLevel.INFO:
      return 'info'
    default:
      return 'debug'
  }
}

function levelNumber(level: LogLevelName): KafkaLogLevel {
  return LEVEL_NUMBERS[level]
}
