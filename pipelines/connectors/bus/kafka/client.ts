/** The kafkajs client every producer, admin and consumer of one bus is made from. */
import { Kafka } from 'kafkajs'
import type { LogBridge } from './log-bridge.ts'

export interface ClientSettings {
  brokers: string[]
  clientId: string
  connectionTimeoutMs: number
  requestTimeoutMs: number
}

export function createClient(settings: ClientSettings, logs: LogBridge): Kafka {
  return new Kafka({
    brokers: settings.brokers,
    clientId: settings.clientId,
    connectionTimeout: settings.connectionTimeoutMs,
    requestTimeout: settings.requestTimeoutMs,
    logLevel: logs.kafkaLevel,
    logCreator: logs.logCreator,
  })
}

/** Connect a kafkajs client once; forget a failed attempt so the next call tries again. */
export function connectOnce<T extends { connect(): Promise<void> }>(
  create: () => T,
  forget: () => void,
): Promise<T> {
  const client = create()
  const connected = client.connect().then(() => client)
  connected.catch(() => forget())
  return connected
}
