import { decodePushRequest, type PushRequestRecord } from '../../schemas/push.ts'
import type { BusRecord, ProduceMessage, RecordBatch } from '../connectors/bus/bus.ts'
import type { Store } from '../connectors/store/store.ts'
import { deadLetter, PermanentError, type StageReport } from '../failures/outcome.ts'
import { encodeBatches, type DeviceColumns } from './delivery-batch.ts'
import {
  buildBatch,
  pageBatch,
  customerOf,
  customerTargets,
  decidePlanning,
  pages,
  type RequestState,
} from './plan.ts'
import { latestStates, requestRow, stateKey, writeRequestRows, type RequestRow } from './request-log.ts'
import { broadcastPage, customerDevices } from './targets.ts'

/**
 * One keyset page of a request's targets: the devices to deliver to, the last install the page
 * read (the cursor: members without an enabled push token are read but not delivered to), and
 * whether the page was full (another may follow).
 */
export interface TargetPage {
  devices: DeviceColumns
  last: string | undefined
  full: boolean
}

export type PageReader = (after: string, limit: number) => Promise<TargetPage>

/**
 * Where the members of an audience_id or profile request come from (the audience compiler), one
 * page at a time in install order. A reader throws TargetGone when the target no longer exists
 * (e.g. the audience was deleted after the 202): the request is then recorded with that error.
 */
export interface MemberSource {
  pagesOf(record: PushRequestRecord): PageReader
}

/** Installs a paged request reads per target query, in whole batches (the worker's batchesPerRead): a read has a fixed cost (~14 ms of engine CPU on `devices FINAL`), 2.0 against 2.7-3.0 us an install at 10,000 (1M devices). */
export const PLANNER_READ_INSTALLS = 50_000

export class TargetGone extends Error {
  override name = 'TargetGone'
}

export interface PlannerDeps {
  store: Store
  /** Produce delivery batches durably onto the push-deliveries topic. */
  emit: (messages: ProduceMessage[]) => Promise<void>
  /** Installs per delivery batch. */
  pageSize: number
  /**
   * Delivery batches read per target query (default 1): a paged request reads
   * `pageSize * batchesPerRead` installs at once and emits them as batches of `pageSize` in one
   * produce. Fewer, bigger reads cost the engine less per install (a read has a fixed cost);
   * the batches, what the sender may resend after a crash, stay `pageSize`.
   */
  batchesPerRead?: number
  /** audience_id and profile targets; absent: such requests are recorded with an error. */
  members?: MemberSource
  now?: () => number
  /** How often a paged request's progress (cursor) is recorded, at most (default 1 s). */
  cursorEveryMs?: number
  onPlanned?: (info: {
    record: PushRequestRecord
    generation: number
    targeted: number
    error?: string
  }) => void
  onSkipped?: (record: PushRequestRecord, reason: string) => void
}

/**
 * The push planner: the single owner of an app's requests (the push-requests topic is keyed by
 * app). For each request it drops repeats within 24 hours (push_requests is the record), resolves
 * the targets into pages in install order and puts one delivery batch per page on the
 * push-deliveries topic, then records the request as planned.
 *
 * Safe to replay at any point: batch ids are `${request}:${generation}:${page}`, a paged request
 * records its cursor as it goes (at most every `cursorEveryMs`) and a redelivered one resumes
 * there, re-emitting at most the pages after the last recorded cursor; the sender records each
 * (request, install) once, so a re-emitted page sends nothing twice. customer_id requests of one
 * bus batch are planned together: one device query per app, one produce, one insert.
 */
export function pushPlanner(deps: PlannerDeps) {
  const now = deps.now ?? Date.now
  const cursorEveryMs = deps.cursorEveryMs ?? 1000

  const planPaged = async (
    record: PushRequestRecord,
    generation: number,
    resume: RequestState | undefined,
    page: PageReader,
  ) => {
    // A repeat that finds its request half planned resumes it, in the first one's 24-hour window.
    if (resume) record = { ...record, receivedAt: resume.receivedAt }
    const state = resume
      ? { ...resume }
      : { status: 'planning' as const, targeted: 0, unmatched: 0, pages: 0, cursor: '' }
    if (!resume) await writeRequestRows(deps.store, [requestRow(record, generation, state)])
    let recordedAt = now()
    let error: string | undefined
    const readSize = deps.pageSize * Math.max(1, Math.floor(deps.batchesPerRead ?? 1))
    // The first read is one batch and reads double up to readSize, so the first deliveries go out
    // without waiting behind a big read.
    let size = deps.pageSize
    for (;;) {
      let read: TargetPage
      try {
        read = await page(state.cursor, size)
        size = Math.min(readSize, size * 2)
      } catch (err) {
        if (!(err instanceof TargetGone)) throw err
        error = err.message
        break
      }
      const found = read.devices.installs.length
      if (found > 0) {
        const messages: ProduceMessage[] = []
        for (let from = 0; from < found; from += deps.pageSize) {
          const to = Math.min(found, from + deps.pageSize)
          messages.push(
            ...encodeBatches(pageBatch(record, generation, state.pages, read.devices, from, to, now())),
          )
          state.pages++
        }
        await deps.emit(messages)
        state.targeted += found
      }
      if (read.last !== undefined) state.cursor = read.last
      if (!read.full) break
      if (now() - recordedAt >= cursorEveryMs) {
        await writeRequestRows(deps.store, [requestRow(record, generation, state)])
        recordedAt = now()
      }
    }
    await writeRequestRows(deps.store, [
      requestRow(record, generation, {
        ...state,
        status: 'planned',
        plannedAt: now(),
        ...(error && { error }),
      }),
    ])
    deps.onPlanned?.({ record, generation, targeted: state.targeted, ...(error && { error }) })
  }

  /** customer_id requests of one batch: devices read per app at once, batches emitted in one produce. */
  const planCustomers = async (requests: { record: PushRequestRecord; generation: number }[]) => {
    if (requests.length === 0) return
    const byApp = new Map<string, Set<string>>()
    for (const { record } of requests) {
      const set = byApp.get(record.appId) ?? new Set<string>()
      for (const m of record.messages) set.add(customerOf(m))
      byApp.set(record.appId, set)
    }
    const devicesByApp = new Map<string, Awaited<ReturnType<typeof customerDevices>>>()
    for (const [app, customers] of byApp)
      devicesByApp.set(app, await customerDevices(deps.store, app, [...customers]))
    const messages: ProduceMessage[] = []
    const rows: RequestRow[] = []
    const plannedAt = now()
    const planned: { record: PushRequestRecord; generation: number; targeted: number }[] = []
    for (const { record, generation } of requests) {
      const wanted = new Set(record.messages.map((m) => customerOf(m)))
      const devices = (devicesByApp.get(record.appId) ?? []).filter((d) => wanted.has(d.customer_id))
      const { targets, unmatched } = customerTargets(record, devices)
      const chunks = pages(targets, deps.pageSize)
      chunks.forEach((chunk, page) =>
        messages.push(...encodeBatches(buildBatch(record, generation, page, chunk, plannedAt))),
      )
      rows.push(
        requestRow(record, generation, {
          status: 'planned',
          targeted: targets.length,
          unmatched,
          pages: chunks.length,
          cursor: targets.at(-1)?.device.install_uuid ?? '',
          plannedAt,
        }),
      )
      planned.push({ record, generation, targeted: targets.length })
    }
    if (messages.length > 0) await deps.emit(messages)
    await writeRequestRows(deps.store, rows)
    for (const p of planned) deps.onPlanned?.(p)
  }

  return async (batch: RecordBatch): Promise<StageReport> => {
    const report: StageReport = { outcomes: [] }
    const records: { bus: BusRecord; record: PushRequestRecord }[] = []
    for (const bus of batch.records) {
      const decoded = decodePushRequest(bus.value)
      if (decoded.ok) records.push({ bus, record: decoded.record })
      else report.outcomes.push({ record: bus, outcome: deadLetter(new PermanentError(decoded.reason)) })
    }
    if (records.length === 0) return report
    const states = await latestStates(
      deps.store,
      records.map(({ record }) => ({ appId: record.appId, requestId: record.requestId })),
    )
    const customers: { record: PushRequestRecord; generation: number }[] = []
    for (const { record } of records) {
      const key = stateKey(record.appId, record.requestId)
      const decision = decidePlanning(states.get(key), record)
      if (decision.kind === 'skip') {
        deps.onSkipped?.(record, decision.reason)
        continue
      }
      // Later records of this batch see this one as planned (a repeat in the same batch).
      states.set(key, {
        generation: decision.generation,
        receivedAt: decision.resume?.receivedAt ?? record.receivedAt,
        status: 'planned',
        targeted: 0,
        unmatched: 0,
        pages: 0,
        cursor: '',
      })
      if (record.targetType === 'customer_id') {
        customers.push({ record, generation: decision.generation })
        continue
      }
      await planPaged(record, decision.generation, decision.resume, pageSource(deps, record))
    }
    await planCustomers(customers)
    return report
  }
}

function pageSource(deps: PlannerDeps, record: PushRequestRecord): PageReader {
  if (record.targetType === 'broadcast')
    return async (after, limit) => {
      const devices = await broadcastPage(deps.store, record.appId, after, limit)
      return { devices, last: devices.installs.at(-1), full: devices.installs.length >= limit }
    }
  if (!deps.members)
    return async () => {
      throw new TargetGone(`${record.targetType} targets are not served by this worker`)
    }
  return deps.members.pagesOf(record)
}
