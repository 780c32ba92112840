import { SCHEMA_URL, lines, uuid } from './ingestion-scenario.ts'

export interface SentBody {
  uuids: string[]
  status: number | 'error'
  transactionId?: string
}

/**
 * Streams upload bodies at an edge until `stop()` is called: each body has fresh events and,
 * from the second on, a few uuids of the previous body again (duplicates across bodies).
 * Records which bodies were answered 202 and with which transaction.
 */
export function streamUploads(options: {
  url: () => string
  auth: string
  appId: string
  customers: string[]
  concurrency?: number
  /** Stop sending after this many bodies (bounded load). */
  maxBodies?: number
  /** Each sender waits this long between bodies: a steady load instead of as fast as answered. */
  paceMs?: number
}) {
  const sent: SentBody[] = []
  let stopped = false
  let previous: string[] = []
  const one = async () => {
    const fresh = Array.from({ length: 20 }, () => uuid())
    const repeated = previous.slice(0, 3)
    previous = fresh
    const ids = [...fresh, ...repeated]
    const body = lines(
      ids.map((id, i) => ({
        schema_url: SCHEMA_URL,
        app_uuid: options.appId,
        customer_id: options.customers[i % options.customers.length],
        event_name: 'Streamed',
        event_time: Date.now(),
        uuid: id,
      })),
    )
    const record: SentBody = { uuids: ids, status: 'error' }
    sent.push(record)
    try {
      const res = await fetch(`${options.url()}/v0/uploads`, {
        method: 'POST',
        headers: { Authorization: options.auth, 'Content-Type': 'application/json' },
        body,
      })
      record.status = res.status
      if (res.status === 202)
        record.transactionId = ((await res.json()) as { transaction_id: string }).transaction_id
    } catch {
      record.status = 'error'
    }
  }
  const loops = Array.from({ length: options.concurrency ?? 4 }, async () => {
    while (!stopped && sent.length < (options.maxBodies ?? Infinity)) {
      await one()
      if (options.paceMs) await new Promise((resolve) => setTimeout(resolve, options.paceMs))
    }
  })
  return {
    sent,
    async stop() {
      stopped = true
      await Promise.all(loops)
    },
  }
}

/** Every uuid of an accepted body must be stored exactly once; nothing else may be stored twice. */
export function exactlyOnceViolations(sent: SentBody[], counts: Map<string, number>): string[] {
  const problems: string[] = []
  const accepted = new Set(sent.filter((b) => b.status === 202).flatMap((b) => b.uuids))
  for (const id of accepted)
    if (counts.get(id) !== 1) problems.push(`${id} accepted, stored ${counts.get(id) ?? 0} times`)
  for (const [id, n] of counts) if (n > 1) problems.push(`${id} stored ${n} times`)
  return problems
}
