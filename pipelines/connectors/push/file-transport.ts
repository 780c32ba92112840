import { mkdir, open } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import type { Clock } from '../../clock.ts'
import type { DeliveryGroup, DeliveryOutcome, PushDelivery, PushTransport } from '../../push/transport.ts'
import { DeliveryLineBytes, deliveryLineTemplate, LineBuffer, type DeliveryLine } from './delivery-lines.ts'
import { deliveryRecord } from './delivery-record.ts'

/** App ids are letters, digits, `.`, `_` and `-` (schemas/admin.ts); anything else never names a directory. */
const SAFE_APP_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/

/**
 * The default transport: each delivery appended as one JSON line (delivery-record.ts, plus
 * `written_at`) to `<dataDir>/push/<app_id>/<YYYY-MM-DD>.jsonl`, the UTC day of the write. The
 * lines of a batch go out in one write per file and are fsync'd before they are reported sent, so
 * a crash loses no delivery reported sent (a resent batch may add a line twice: `delivery_id`
 * tells them apart). One instance serves every app of a process; writes to one file are queued,
 * so lines of concurrent batches never interleave.
 */
export class FileTransport implements PushTransport {
  readonly kind = 'file' as const
  private readonly root: string
  private readonly clock: Pick<Clock, 'now'>
  private readonly queues = new Map<string, Promise<void>>()
  /** Files whose directory entry is known durable (fsync'd directory after the file was created). */
  private readonly durableEntries = new Set<string>()
  /** Line buffers of finished calls, for the next (at most a few: one per file written at once). */
  private readonly spare: LineBuffer[] = []

  constructor(options: { dataDir: string; clock?: Pick<Clock, 'now'> }) {
    this.root = resolve(options.dataDir, 'push')
    this.clock = options.clock ?? Date
  }

  /** The file a delivery of this app written at `at` (ms) goes to. */
  pathFor(appId: string, at: number): string {
    return join(this.root, appId, `${new Date(at).toISOString().slice(0, 10)}.jsonl`)
  }

  async send(deliveries: readonly PushDelivery[]): Promise<DeliveryOutcome[]> {
    const now = this.clock.now()
    const extra = { written_at: new Date(now).toISOString() }
    const outcomes: DeliveryOutcome[] = new Array<DeliveryOutcome>(deliveries.length)
    const byFile = new Map<string, { text: string; indexes: number[] }>()
    // Per app (its file) and per shared message (its line template): a broadcast's batch is one
    // app and a message or two, so each line is a few concatenations (delivery-lines.ts).
    const files = new Map<string, { path: string; group: { text: string; indexes: number[] } } | null>()
    const templates = new Map<PushDelivery['message'], Map<string, DeliveryLine | undefined>>()
    deliveries.forEach((d, i) => {
      let file = files.get(d.appId)
      if (file === undefined) {
        file = null
        if (SAFE_APP_ID.test(d.appId) && d.appId !== '.' && d.appId !== '..') {
          const path = this.pathFor(d.appId, now)
          const group = byFile.get(path) ?? { text: '', indexes: [] }
          byFile.set(path, group)
          file = { path, group }
        }
        files.set(d.appId, file)
      }
      if (file === null) {
        outcomes[i] = {
          status: 'failed',
          error: `invalid app id for a file name: ${JSON.stringify(d.appId)}`,
        }
        return
      }
      let forMessage = templates.get(d.message)
      if (!forMessage) templates.set(d.message, (forMessage = new Map<string, DeliveryLine | undefined>()))
      const key = `${d.requestId}\n${d.campaignKey ?? '\u0000'}\n${d.appId}\n${d.platform}\n${d.attempt}`
      let line = forMessage.get(key)
      if (!forMessage.has(key)) forMessage.set(key, (line = deliveryLineTemplate(d, extra)))
      file.group.text += (line ? line(d) : JSON.stringify({ ...deliveryRecord(d), ...extra })) + '\n'
      file.group.indexes.push(i)
    })
    await Promise.all(
      [...byFile].map(async ([path, { text, indexes }]) => {
        let outcome: DeliveryOutcome = { status: 'sent' }
        try {
          await this.append(path, text)
        } catch (err) {
          outcome = { status: 'retry', error: `push file ${path}: ${(err as Error).message}` }
        }
        for (const i of indexes) outcomes[i] = outcome
      }),
    )
    return outcomes
  }

  /**
   * The lines of these groups, built straight into one buffer per file from the batches' columns
   * (a DeliveryLineBytes per group and message), one write and one fsync per file: the same bytes
   * `send` writes for the same deliveries, without a PushDelivery object or a string per line.
   * One outcome per group: its file's.
   */
  async sendGroups(groups: readonly DeliveryGroup[]): Promise<DeliveryOutcome[]> {
    const now = this.clock.now()
    const extra = { written_at: new Date(now).toISOString() }
    const outcomes = new Array<DeliveryOutcome>(groups.length)
    const byFile = new Map<string, { lines: LineBuffer; groups: number[] }>()
    groups.forEach((g, k) => {
      if (!SAFE_APP_ID.test(g.appId) || g.appId === '.' || g.appId === '..') {
        outcomes[k] = {
          status: 'failed',
          error: `invalid app id for a file name: ${JSON.stringify(g.appId)}`,
        }
        return
      }
      const path = this.pathFor(g.appId, now)
      let file = byFile.get(path)
      if (!file) byFile.set(path, (file = { lines: this.lineBuffer(g.at.length * 768), groups: [] }))
      file.groups.push(k)
      const templates = new Array<DeliveryLineBytes | null | undefined>(g.messages.length)
      const { at, installs, customers, tokens, message, deliveryIdPrefix } = g
      for (let i = 0; i < at.length; i++) {
        const p = at[i]!
        const m = message[p]!
        const install = installs[p]!
        let template = templates[m]
        if (template === undefined) {
          const sample = this.delivery(g, p)
          template = templates[m] = DeliveryLineBytes.of(sample, extra) ?? null
        }
        if (template) template.write(file.lines, deliveryIdPrefix, install, customers[p]!, tokens[p]!)
        else {
          // A message holding a marker: serialised whole, as send() does.
          const text = `${JSON.stringify({ ...deliveryRecord(this.delivery(g, p)), ...extra })}\n`
          const bytes = Buffer.from(text)
          file.lines.append(bytes)
        }
      }
    })
    await Promise.all(
      [...byFile].map(async ([path, { lines, groups: members }]) => {
        let outcome: DeliveryOutcome = { status: 'sent' }
        try {
          await this.append(path, lines.view())
        } catch (err) {
          outcome = { status: 'retry', error: `push file ${path}: ${(err as Error).message}` }
        }
        // Written (or given up): the buffer serves the next call.
        if (this.spare.length < 4) this.spare.push(lines)
        for (const k of members) outcomes[k] = outcome
      }),
    )
    return outcomes
  }

  /**
   * A line buffer, emptied: one a finished call handed back, or a new one. A run's lines are
   * megabytes; allocating them anew each call made V8 collect for the external memory alone.
   */
  private lineBuffer(bytes: number): LineBuffer {
    const reused = this.spare.pop()
    if (!reused) return new LineBuffer(bytes)
    reused.clear()
    return reused
  }

  /** The delivery at position `p` of a group, as `send` gets it. */
  private delivery(g: DeliveryGroup, p: number): PushDelivery {
    return {
      deliveryId: g.deliveryIdPrefix + g.installs[p]!,
      requestId: g.requestId,
      campaignKey: g.campaignKey,
      appId: g.appId,
      installUuid: g.installs[p]!,
      customerId: g.customers[p]!,
      platform: g.platform,
      pushToken: g.tokens[p]!,
      message: g.messages[g.message[p]!]!,
      attempt: g.attempt,
    }
  }

  async close(): Promise<void> {
    await Promise.all(this.queues.values())
  }

  private append(path: string, text: string | Buffer): Promise<void> {
    const previous = this.queues.get(path) ?? Promise.resolve()
    const run = previous.then(async () => {
      // A file written before has its directory: no mkdir (a call into the thread pool per
      // write) unless the open finds it gone (moved away meanwhile), which makes the file new.
      let file
      if (this.durableEntries.has(path)) {
        file = await open(path, 'a').catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'ENOENT') throw err
          this.durableEntries.delete(path)
          return undefined
        })
      }
      if (!file) {
        await mkdir(resolve(path, '..'), { recursive: true })
        file = await open(path, 'a')
      }
      try {
        await file.writeFile(text)
        await file.sync()
      } finally {
        await file.close()
      }
      // A new file's name is durable only once its directory is synced too.
      if (!this.durableEntries.has(path)) {
        const dir = await open(resolve(path, '..'), 'r')
        try {
          await dir.sync()
        } finally {
          await dir.close()
        }
        // Bounded: a day's files are forgotten long after; forgetting one costs one more dir sync.
        if (this.durableEntries.size >= 10_000) this.durableEntries.clear()
        this.durableEntries.add(path)
      }
    })
    const settled = run.catch(() => undefined)
    this.queues.set(path, settled)
    void settled.then(() => {
      if (this.queues.get(path) === settled) this.queues.delete(path)
    })
    return run
  }
}
