import http from 'node:http'

/**
 * The load driver's HTTP client: node:http over a keep-alive agent, bodies sent as prepared
 * Buffers, answers read whole (they are small). Every request resolves, never rejects: a socket
 * error is a result with status 'error'.
 */
export interface HttpResult {
  status: number | 'error'
  body: string
  /** Milliseconds from the start of the request to the end of the answer. */
  ms: number
  /** performance.now() when the answer ended. */
  at: number
  retryAfterS?: number
  error?: string
}

export class HttpClient {
  readonly base: URL
  private readonly agent: http.Agent

  constructor(base: string, maxSockets: number) {
    this.base = new URL(base)
    this.agent = new http.Agent({
      keepAlive: true,
      maxSockets,
      maxFreeSockets: maxSockets,
      keepAliveMsecs: 10_000,
    })
  }

  request(
    method: string,
    path: string,
    headers: Record<string, string> = {},
    body?: Buffer | string,
    timeoutMs = 60_000,
  ): Promise<HttpResult> {
    const started = performance.now()
    const payload = body === undefined ? undefined : typeof body === 'string' ? Buffer.from(body) : body
    return new Promise((resolve) => {
      const done = (result: Omit<HttpResult, 'ms' | 'at'>) => {
        const at = performance.now()
        resolve({ ...result, ms: at - started, at })
      }
      const req = http.request(
        {
          host: this.base.hostname,
          port: this.base.port,
          method,
          path,
          agent: this.agent,
          headers: payload ? { ...headers, 'Content-Length': String(payload.length) } : headers,
          timeout: timeoutMs,
        },
        (res) => {
          const chunks: Buffer[] = []
          res.on('data', (c: Buffer) => chunks.push(c))
          res.on('end', () => {
            const retryAfter = Number(res.headers['retry-after'])
            done({
              status: res.statusCode ?? 0,
              body: Buffer.concat(chunks).toString('utf8'),
              ...(Number.isFinite(retryAfter) ? { retryAfterS: retryAfter } : {}),
            })
          })
          res.on('error', (err) => done({ status: 'error', body: '', error: err.message }))
        },
      )
      req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)))
      req.on('error', (err) => done({ status: 'error', body: '', error: err.message }))
      req.end(payload)
    })
  }

  close(): void {
    this.agent.destroy()
  }
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms))

/**
 * Closed loop: `concurrency` senders each take the next job and send it, until the time is up or
 * `next()` has nothing more. What the max-rate scenarios and the baselines run.
 */
export async function closedLoop<J>(options: {
  concurrency: number
  durationMs: number
  next: () => J | undefined
  send: (job: J) => Promise<void>
  /** Awaited before each job is taken (e.g. to hold the senders while a backlog is too long). */
  before?: () => Promise<void>
}): Promise<{ elapsedMs: number }> {
  const started = performance.now()
  const deadline = started + options.durationMs
  const sender = async () => {
    while (performance.now() < deadline) {
      if (options.before) await options.before()
      if (performance.now() >= deadline) return
      const job = options.next()
      if (job === undefined) return
      await options.send(job)
    }
  }
  await Promise.all(Array.from({ length: options.concurrency }, sender))
  return { elapsedMs: performance.now() - started }
}

/**
 * Open loop: sends at a fixed rate whatever the answers, with at most `maxInFlight` requests
 * outstanding; a send due while that many are outstanding is counted as `skipped` (the client
 * could not keep the rate), not queued.
 */
export async function openLoop(options: {
  ratePerSecond: number
  durationMs: number
  maxInFlight: number
  send: (index: number) => Promise<void>
  /** Checked between sends: true ends the loop before `durationMs`. */
  until?: () => boolean
}): Promise<{ elapsedMs: number; sent: number; skipped: number }> {
  const started = performance.now()
  let sent = 0
  let skipped = 0
  let inFlight = 0
  const pending = new Set<Promise<void>>()
  let due = 0
  while (performance.now() - started < options.durationMs && !options.until?.()) {
    const shouldHave = Math.floor(((performance.now() - started) / 1000) * options.ratePerSecond) + 1
    while (due < shouldHave) {
      due++
      if (inFlight >= options.maxInFlight) {
        skipped++
        continue
      }
      inFlight++
      const p: Promise<void> = options.send(sent++).finally(() => {
        inFlight--
        pending.delete(p)
      })
      pending.add(p)
    }
    const nextAt = started + (due / options.ratePerSecond) * 1000
    await sleep(Math.max(1, Math.min(50, nextAt - performance.now())))
  }
  const elapsedMs = performance.now() - started
  await Promise.all([...pending])
  return { elapsedMs, sent, skipped }
}

/** Basic auth header value. */
export const basic = (user: string, password: string) =>
  `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
