import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import type { BusRecord, ProduceMessage, RecordBatch } from '../../pipelines/connectors/bus/bus.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import {
  decodeBatch,
  encodeBatch,
  MAX_HOLD_MS,
  type DeliveryBatch,
} from '../../pipelines/push/delivery-batch.ts'
import { DELIVERY_ROW_BINARY, DeliveryRows } from '../../pipelines/push/delivery-rows.ts'
import { buildBatch } from '../../pipelines/push/plan.ts'
import { pushPlanner } from '../../pipelines/push/planner.ts'
import { SendRate } from '../../pipelines/push/send-rate.ts'
import { pushSender } from '../../pipelines/push/sender.ts'
import { broadcastPage } from '../../pipelines/push/targets.ts'
import type {
  DeliveryGroup,
  DeliveryOutcome,
  PushDelivery,
  PushPlatform,
  PushTransport,
  TransportResolver,
} from '../../pipelines/push/transport.ts'
import { encodePushRequest, type PushRequestRecord } from '../../schemas/push.ts'
import { manualClock } from '../helpers/manual-clock.ts'
import { tempDir } from '../helpers/temp.ts'

/**
 * The planner and the sender as stages, on the embedded engine, fed record batches directly: what
 * they emit, record and skip on replays, with a transport that answers as told.
 */

const T = 1_700_000_000_000
let offset = 0
const busBatch = (topic: string, values: Buffer[]): RecordBatch => ({
  topic,
  partition: 0,
  records: values.map((value): BusRecord => ({
    topic,
    partition: 0,
    offset: String(offset++),
    key: null,
    value,
    headers: {},
    timestamp: T,
  })),
})

const request = (o: Partial<PushRequestRecord>): PushRequestRecord => ({
  v: 1,
  requestId: 'r',
  appId: 'app',
  orgId: 1,
  receivedAt: T,
  campaignKey: null,
  targetType: 'broadcast',
  allDevices: false,
  messages: [{ alert: 'hello' }],
  origin: 'api',
  ...o,
})

/** A transport that answers each delivery with what `answer` says, and records every call. */
class ScriptedTransport implements PushTransport {
  readonly calls: PushDelivery[][] = []
  constructor(
    readonly kind: PushTransport['kind'],
    private readonly answer: (d: PushDelivery) => DeliveryOutcome | 'throw',
  ) {}
  async send(deliveries: readonly PushDelivery[]): Promise<DeliveryOutcome[]> {
    this.calls.push([...deliveries])
    const outcomes = deliveries.map((d) => this.answer(d))
    if (outcomes.includes('throw'))
      throw Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })
    return outcomes as DeliveryOutcome[]
  }
  async close() {}
}

/** A transport with sendGroups (as the file transport): one scripted answer per group, by its first install. */
class ScriptedGroupsTransport extends ScriptedTransport {
  readonly groupCalls: { platform: string; installs: string[]; deliveryIds: string[] }[][] = []
  constructor(
    kind: PushTransport['kind'],
    answer: (d: PushDelivery) => DeliveryOutcome | 'throw',
    private readonly groupAnswer: (firstInstall: string) => DeliveryOutcome | 'throw',
  ) {
    super(kind, answer)
  }
  async sendGroups(groups: readonly DeliveryGroup[]): Promise<DeliveryOutcome[]> {
    this.groupCalls.push(
      groups.map((g) => ({
        platform: g.platform,
        installs: g.at.map((p) => g.installs[p]!),
        deliveryIds: g.at.map((p) => g.deliveryIdPrefix + g.installs[p]!),
      })),
    )
    const answers = groups.map((g) => this.groupAnswer(g.installs[g.at[0]!]!))
    if (answers.includes('throw')) throw new Error('disk gone')
    return answers as DeliveryOutcome[]
  }
}

const resolver = (transports: Partial<Record<PushPlatform, PushTransport>>): TransportResolver => ({
  transportFor: async (_app, platform) => transports[platform],
  platformsOf: async () => Object.keys(transports) as PushPlatform[],
  close: async () => {},
})

describe('push planner and sender on the embedded engine', () => {
  let store: ChdbStore
  let cleanup: () => Promise<void>
  beforeAll(async () => {
    const dir = await tempDir('push-pipeline')
    cleanup = dir.cleanup
    store = await ChdbStore.open(dir.path)
    await migrate(store)
    const device = (
      app: string,
      install: string,
      o: { token?: string; status?: string; platform?: string } = {},
    ) => ({
      app_id: app,
      install_uuid: install,
      device_uuid: '',
      customer_id: `c-${install}`,
      last_active_at: T,
      app_version: '',
      os_version: '',
      platform: o.platform ?? 'iOS',
      model: '',
      country: '',
      language: '',
      device_timezone: '',
      push_token: o.token ?? `tok-${install}`,
      push_status: o.status ?? 'Enabled (Prominent)',
      version: 1,
    })
    await store.insert('devices', [
      ...['i1', 'i2', 'i3', 'i4', 'i5', 'i6', 'i7'].map((i) => device('plan', i)),
      device('plan', 'i0-disabled', { status: 'Disabled' }),
      device('plan', 'i8-notoken', { token: '' }),
      device('plan', 'i9-dead', { token: 'dead-token' }),
    ])
    await store.insert('invalid_push_tokens', [
      {
        app_id: 'plan',
        push_token: 'dead-token',
        install_uuid: 'i9-dead',
        transport: 'apns',
        reason: 'gone',
        invalidated_at: T,
      },
    ])
  })
  afterAll(async () => {
    await store.close()
    await cleanup()
  })

  const requestRows = (app: string) =>
    store.query<{
      request_id: string
      generation: number
      status: string
      targeted: number
      pages: number
      cursor: string
    }>(
      `SELECT request_id, generation, status, targeted, pages, cursor FROM push_requests FINAL
       WHERE app_id = {app:String} ORDER BY request_id, generation`,
      { app },
    )

  it('reads a broadcast page as columns, a customer id holding a newline included', async () => {
    const at = (install: string, customer: string, platform: string) => ({
      app_id: 'nl',
      install_uuid: install,
      device_uuid: '',
      customer_id: customer,
      last_active_at: T,
      platform,
      push_token: `tok-${install}`,
      push_status: 'Enabled',
      version: 1,
    })
    await store.insert('devices', [at('n1', 'plain', 'iOS'), at('n2', '', 'Android'), at('n3', 'c3', 'iOS')])
    expect(await broadcastPage(store, 'nl', '', 10)).toEqual({
      installs: ['n1', 'n2', 'n3'],
      customers: ['plain', '', 'c3'],
      platforms: ['iOS', 'Android', 'iOS'],
      tokens: ['tok-n1', 'tok-n2', 'tok-n3'],
    })
    // A newline inside a value: the joined column splits into more values than rows, and the page
    // is read again as arrays.
    await store.insert('devices', [at('n4', 'two\nlines', 'iOS'), at('n5', 'c5\n', 'Android')])
    expect(await broadcastPage(store, 'nl', 'n2', 10)).toEqual({
      installs: ['n3', 'n4', 'n5'],
      customers: ['c3', 'two\nlines', 'c5\n'],
      platforms: ['iOS', 'iOS', 'Android'],
      tokens: ['tok-n3', 'tok-n4', 'tok-n5'],
    })
    expect(await broadcastPage(store, 'nl', 'n5', 10)).toEqual({
      installs: [],
      customers: [],
      platforms: [],
      tokens: [],
    })
  })

  it('pages a broadcast in install order, skipping disabled, tokenless and dead tokens; replays emit nothing', async () => {
    const emitted: ProduceMessage[] = []
    const planner = pushPlanner({
      store,
      emit: async (m) => void emitted.push(...m),
      pageSize: 3,
      now: () => T,
    })
    const rec = encodePushRequest(request({ requestId: 'bc', appId: 'plan' })).value
    await planner(busBatch('push-requests', [rec]))
    const batches = emitted.map((m) => (decodeBatch(m.value) as { batch: DeliveryBatch }).batch)
    expect(batches.map((b) => [b.batchId, b.targets.installs])).toEqual([
      ['bc:0:0', ['i1', 'i2', 'i3']],
      ['bc:0:1', ['i4', 'i5', 'i6']],
      ['bc:0:2', ['i7']],
    ])
    expect(emitted.every((m) => m.key === 'plan')).toBe(true)
    expect(
      (await requestRows('plan')).map((r) => [r.request_id, r.status, Number(r.targeted), Number(r.pages)]),
    ).toEqual([['bc', 'planned', 7, 3]])
    // The same record again (a redelivery), and a client's repeat an hour later: nothing.
    await planner(
      busBatch('push-requests', [
        rec,
        encodePushRequest(request({ requestId: 'bc', appId: 'plan', receivedAt: T + 3600_000 })).value,
      ]),
    )
    expect(emitted).toHaveLength(3)
    // A day later the id starts a new request: generation 1.
    await planner(
      busBatch('push-requests', [
        encodePushRequest(request({ requestId: 'bc', appId: 'plan', receivedAt: T + 86_400_000 })).value,
      ]),
    )
    expect(
      emitted.slice(3).map((m) => (decodeBatch(m.value) as { batch: DeliveryBatch }).batch.batchId),
    ).toEqual(['bc:1:0', 'bc:1:1', 'bc:1:2'])
  })

  it('reads several batches per target query and emits them together, the same batches as one read each', async () => {
    const produced: string[][] = []
    const planner = pushPlanner({
      store,
      emit: async (m) =>
        void produced.push(m.map((x) => (decodeBatch(x.value) as { batch: DeliveryBatch }).batch.batchId)),
      pageSize: 2,
      batchesPerRead: 2,
      now: () => T,
    })
    await planner(
      busBatch('push-requests', [encodePushRequest(request({ requestId: 'bc2', appId: 'plan' })).value]),
    )
    // A first read of one batch (the first deliveries go out at once), then reads of two.
    expect(produced).toEqual([['bc2:0:0'], ['bc2:0:1', 'bc2:0:2'], ['bc2:0:3']])
    expect((await requestRows('plan')).find((r) => r.request_id === 'bc2')).toMatchObject({
      status: 'planned',
      cursor: 'i7',
    })
    expect(Number((await requestRows('plan')).find((r) => r.request_id === 'bc2')?.targeted)).toBe(7)
  })

  it('resumes a fan-out cut short after its recorded cursor, under the same batch ids', async () => {
    const emitted: string[] = []
    let failAt = 2
    const planner = pushPlanner({
      store,
      emit: async (messages) => {
        for (const m of messages) {
          const id = (decodeBatch(m.value) as { batch: DeliveryBatch }).batch.batchId
          if (emitted.length === failAt) throw new Error('the bus went away')
          emitted.push(id)
        }
      },
      pageSize: 2,
      now: () => T,
      cursorEveryMs: 0,
    })
    const rec = encodePushRequest(request({ requestId: 'cut', appId: 'plan' })).value
    await expect(planner(busBatch('push-requests', [rec]))).rejects.toThrow('the bus went away')
    expect((await requestRows('plan')).find((r) => r.request_id === 'cut')).toMatchObject({
      status: 'planning',
      cursor: 'i4',
    })
    failAt = -1
    await planner(busBatch('push-requests', [rec]))
    expect(emitted).toEqual(['cut:0:0', 'cut:0:1', 'cut:0:2', 'cut:0:3'])
    expect((await requestRows('plan')).find((r) => r.request_id === 'cut')).toMatchObject({
      status: 'planned',
      cursor: 'i7',
    })
  })

  it('dead-letters a record that is not a push request, and plans the others', async () => {
    const emitted: ProduceMessage[] = []
    const planner = pushPlanner({
      store,
      emit: async (m) => void emitted.push(...m),
      pageSize: 10,
      now: () => T,
    })
    const report = await planner(
      busBatch('push-requests', [
        Buffer.from('{"v":9}'),
        encodePushRequest(request({ requestId: 'ok', appId: 'plan' })).value,
      ]),
    )
    expect(report.outcomes.map((o) => o.outcome.kind)).toEqual(['dead-letter'])
    expect(emitted).toHaveLength(1)
  })

  const deliveries = (requestId: string) =>
    store.query<{
      install_uuid: string
      status: string
      error: string
      attempts: number
      transport: string
      platform: string
    }>(
      `SELECT install_uuid, status, error, attempts, transport, platform FROM push_deliveries
       WHERE app_id = 'send' AND request_id = {id:String} ORDER BY install_uuid`,
      { id: requestId },
    )

  const sendBatch = (requestId: string, targets: [string, string][]) =>
    encodeBatch(
      buildBatch(
        request({ requestId, appId: 'send', campaignKey: 'camp' }),
        0,
        0,
        targets.map(([install, platform]) => ({
          device: {
            install_uuid: install,
            customer_id: `c-${install}`,
            platform,
            push_token: `tok-${install}`,
          },
          message: 0,
        })),
        T,
      ),
    ).value

  it('records every outcome once: sent, retried after Retry-After, dead token, no transport, unsupported platform', async () => {
    const tries = new Map<string, number>()
    const ios = new ScriptedTransport('apns', (d) => {
      const n = (tries.get(d.installUuid) ?? 0) + 1
      tries.set(d.installUuid, n)
      if (d.installUuid === 's-dead')
        return { status: 'failed', error: 'APNs 410 Unregistered', invalidToken: true }
      if (d.installUuid === 's-busy' && n === 1)
        return { status: 'retry', error: 'APNs 429', retryAfterMs: 7000 }
      return { status: 'sent' }
    })
    const clock = { ...manualClock(T), random: () => 0.5 }
    const sender = pushSender({
      store,
      transports: resolver({ ios }),
      rate: new SendRate(0, clock),
      retry: { attempts: 3, deadlineMs: 60_000, baseDelayMs: 100, maxDelayMs: 1000 },
      clock,
    })
    const value = sendBatch('s1', [
      ['s-ok', 'iOS'],
      ['s-busy', 'ios'],
      ['s-dead', 'iOS'],
      ['s-droid', 'Android'],
      ['s-win', 'Windows'],
    ])
    await sender(busBatch('push-deliveries', [value]))
    expect(
      (await deliveries('s1')).map((r) => [
        r.install_uuid,
        r.platform,
        r.transport,
        r.status,
        r.error,
        Number(r.attempts),
      ]),
    ).toEqual([
      ['s-busy', 'ios', 'apns', 'sent', '', 2],
      ['s-dead', 'ios', 'apns', 'failed', 'APNs 410 Unregistered', 1],
      ['s-droid', 'android', '', 'failed', 'no transport configured for android', 0],
      ['s-ok', 'ios', 'apns', 'sent', '', 1],
      ['s-win', 'Windows', '', 'failed', 'unsupported platform "Windows"', 0],
    ])
    // The retry waited the transport's Retry-After, not the shorter backoff.
    expect(clock.slept).toEqual([7000])
    expect(
      ios.calls.map((c) => c.map((d) => [d.installUuid, d.attempt, d.deliveryId, d.campaignKey])),
    ).toEqual([
      [
        ['s-ok', 1, 's1:s-ok', 'camp'],
        ['s-busy', 1, 's1:s-busy', 'camp'],
        ['s-dead', 1, 's1:s-dead', 'camp'],
      ],
      [['s-busy', 2, 's1:s-busy', 'camp']],
    ])
    expect(
      await store.query(
        'SELECT push_token, install_uuid, transport FROM invalid_push_tokens FINAL WHERE app_id = {a:String}',
        {
          a: 'send',
        },
      ),
    ).toEqual([{ push_token: 'tok-s-dead', install_uuid: 's-dead', transport: 'apns' }])

    // Redelivered (a crash before the commit): nothing is sent or recorded again.
    await sender(busBatch('push-deliveries', [value, value]))
    expect(ios.calls).toHaveLength(2)
    expect(await deliveries('s1')).toHaveLength(5)
  })

  it('writes push_deliveries rows as RowBinary that the engine reads as the same values as JSON rows', async () => {
    const head = (requestId: string) => ({
      appId: 'rows-app',
      requestId,
      generation: 70_000,
      campaignKey: 'spring "sale" ünï',
      campaignId: 2 ** 40 + 5,
      creative: 'B',
    })
    const tails = [
      {
        platform: 'ios',
        transport: 'file',
        status: 'sent',
        error: '',
        attempts: 1,
        messageIndex: 0,
        batchId: 'r:0:0',
        plannedAt: T,
        firstAttemptAt: T + 1,
        finishedAt: T + 2,
        version: T + 2,
      },
      {
        platform: 'android',
        transport: 'fcm',
        status: 'failed',
        error: `FCM 404 UNREGISTERED: ${'é'.repeat(90)} \n\t"quoted"`,
        attempts: 65_535,
        messageIndex: 9_999,
        batchId: 'r:0:0.1',
        plannedAt: T,
        firstAttemptAt: T + 10,
        finishedAt: T + 20_000,
        version: T + 20_000,
      },
    ]
    const ids: [string, string][] = [
      ['i-1', 'c-1'],
      ['i-2-' + 'x'.repeat(200), ''],
      ['i-3-ü', 'cüst-ø-😀'],
      ['i-4', 'c'.repeat(127)],
    ]
    const binary = new DeliveryRows(16)
    const headBytes = DeliveryRows.head(head('rows-binary'))
    const tailBytes = tails.map((t) => DeliveryRows.tail(t))
    let json = ''
    ids.forEach(([install, customer], i) => {
      const t = tails[i % 2]!
      binary.row(headBytes, install, customer, tailBytes[i % 2]!)
      const h = head('rows-json')
      json +=
        JSON.stringify([
          h.appId,
          h.requestId,
          h.generation,
          h.campaignKey,
          h.campaignId,
          h.creative,
          install,
          customer,
          t.platform,
          t.transport,
          t.status,
          t.error,
          t.attempts,
          t.messageIndex,
          t.batchId,
          t.plannedAt,
          t.firstAttemptAt,
          t.finishedAt,
          t.version,
        ]) + '\n'
    })
    await store.insert('push_deliveries', binary.bytes(), { rowBinary: DELIVERY_ROW_BINARY })
    await store.insert('push_deliveries', Buffer.from(json), {
      compactColumns: DELIVERY_ROW_BINARY.map(([name]) => name),
    })
    const read = (requestId: string) =>
      store.query<Record<string, unknown>>(
        `SELECT * EXCEPT (request_id) FROM push_deliveries
         WHERE app_id = 'rows-app' AND request_id = {r:String} ORDER BY install_uuid`,
        { r: requestId },
      )
    const fromBinary = await read('rows-binary')
    expect(fromBinary).toHaveLength(4)
    expect(fromBinary).toEqual(await read('rows-json'))
    expect(fromBinary[2]).toMatchObject({ install_uuid: 'i-3-ü', customer_id: 'cüst-ø-😀', attempts: 1 })
    expect(fromBinary[1]).toMatchObject({
      generation: 70_000,
      campaign_id: 2 ** 40 + 5,
      attempts: 65_535,
      message_index: 9_999,
      status: 'failed',
      error: tails[1]!.error,
    })
  })

  it('tells apart two apps of one partition that use the same request id and install ids', async () => {
    const file = new ScriptedTransport('file', () => ({ status: 'sent' }))
    const clock = { ...manualClock(T), random: () => 0.5 }
    const sender = pushSender({
      store,
      transports: resolver({ ios: file }),
      rate: new SendRate(0, clock),
      retry: { attempts: 1, deadlineMs: 0, baseDelayMs: 1, maxDelayMs: 1 },
      clock,
    })
    const batchOf = (appId: string) =>
      encodeBatch(
        buildBatch(
          request({ requestId: 'shared-id', appId }),
          0,
          0,
          ['x1', 'x2'].map((install) => ({
            device: {
              install_uuid: install,
              customer_id: '',
              platform: 'iOS',
              push_token: `${appId}-${install}`,
            },
            message: 0,
          })),
          T,
        ),
      ).value
    // App A's batch was recorded before (a redelivery); app B's, in the same bus batch, is new.
    await sender(busBatch('push-deliveries', [batchOf('app-a')]))
    await sender(busBatch('push-deliveries', [batchOf('app-a'), batchOf('app-b')]))
    expect(file.calls.flat().map((d) => [d.appId, d.installUuid])).toEqual([
      ['app-a', 'x1'],
      ['app-a', 'x2'],
      ['app-b', 'x1'],
      ['app-b', 'x2'],
    ])
    const rows = await store.query<{ app_id: string; install_uuid: string; n: string }>(
      `SELECT app_id, install_uuid, count() AS n FROM push_deliveries WHERE request_id = 'shared-id'
       GROUP BY app_id, install_uuid ORDER BY app_id, install_uuid`,
    )
    expect(rows.map((r) => [r.app_id, r.install_uuid, Number(r.n)])).toEqual([
      ['app-a', 'x1', 1],
      ['app-a', 'x2', 1],
      ['app-b', 'x1', 1],
      ['app-b', 'x2', 1],
    ])
  })

  it('a crash between sending and recording resends at most recordEvery deliveries, and records each install once', async () => {
    const file = new ScriptedTransport('file', () => ({ status: 'sent' }))
    let failNextInsert = false
    // The store dies on the insert of the second run: after its deliveries were sent.
    const flaky = Object.create(store) as ChdbStore
    let inserts = 0
    flaky.insert = async (table, rows, options) => {
      if (table === 'push_deliveries' && ++inserts === 2 && !failNextInsert) {
        failNextInsert = true
        throw new Error('the process died here')
      }
      return store.insert(table, rows, options)
    }
    const clock = { ...manualClock(T), random: () => 0.5 }
    const sender = pushSender({
      store: flaky,
      transports: resolver({ ios: file }),
      rate: new SendRate(0, clock),
      retry: { attempts: 1, deadlineMs: 0, baseDelayMs: 1, maxDelayMs: 1 },
      clock,
      recordEvery: 4,
    })
    const page = (n: number) =>
      encodeBatch(
        buildBatch(
          request({ requestId: 'crash', appId: 'send' }),
          0,
          n,
          [0, 1, 2, 3].map((i) => ({
            device: { install_uuid: `p${n}-${i}`, customer_id: '', platform: 'iOS', push_token: 't' },
            message: 0,
          })),
          T,
        ),
      ).value
    const bus = busBatch('push-deliveries', [page(0), page(1), page(2)])
    await expect(sender(bus)).rejects.toThrow('the process died here')
    // Runs of recordEvery, each recorded before the next is sent: the second run's record failed
    // after it was sent, and nothing more was sent.
    expect(file.calls.map((c) => c.map((d) => d.installUuid))).toEqual([
      ['p0-0', 'p0-1', 'p0-2', 'p0-3'],
      ['p1-0', 'p1-1', 'p1-2', 'p1-3'],
    ])
    await sender(bus)
    // The first run was recorded: not sent again. The run sent and not recorded is sent again
    // (recordEvery deliveries, no more); the rest once.
    const sent = new Map<string, number>()
    for (const d of file.calls.flat()) sent.set(d.installUuid, (sent.get(d.installUuid) ?? 0) + 1)
    expect([...sent].filter(([, n]) => n > 1).map(([i]) => i)).toEqual(['p1-0', 'p1-1', 'p1-2', 'p1-3'])
    expect(sent.size).toBe(12)
    const rows = await store.query<{ install_uuid: string; n: number }>(
      `SELECT install_uuid, count() AS n FROM push_deliveries WHERE app_id = 'send' AND request_id = 'crash'
       GROUP BY install_uuid ORDER BY install_uuid`,
    )
    expect(rows.map((r) => [r.install_uuid, Number(r.n)])).toEqual(
      [0, 1, 2].flatMap((n) => [0, 1, 2, 3].map((i) => [`p${n}-${i}`, 1])),
    )
  })

  it('holds a batch handed over ahead of its moment until notBefore, at most MAX_HOLD_MS, then sends and records it', async () => {
    const file = new ScriptedTransport('file', () => ({ status: 'sent' }))
    const clock = { ...manualClock(T), random: () => 0.5 }
    const sender = pushSender({
      store,
      transports: resolver({ ios: file }),
      rate: new SendRate(0, clock),
      retry: { attempts: 1, deadlineMs: 0, baseDelayMs: 1, maxDelayMs: 1 },
      clock,
      recordEvery: 2,
    })
    const batch = (requestId: string, install: string, notBefore?: number) =>
      encodeBatch(
        buildBatch(
          request({ requestId, appId: 'hold', ...(notBefore !== undefined && { notBefore }) }),
          0,
          0,
          [
            {
              device: { install_uuid: install, customer_id: '', platform: 'iOS', push_token: 't' },
              message: 0,
            },
          ],
          T,
        ),
      ).value
    // Through the bus encoding: the request's notBefore rides on the batch.
    expect(decodeBatch(batch('early', 'h1', T + 1500))).toMatchObject({
      ok: true,
      batch: { notBefore: T + 1500 },
    })
    // A run of the held batch and one without: the run waits for the later notBefore; a bogus
    // far-future notBefore holds no longer than MAX_HOLD_MS.
    await sender(busBatch('push-deliveries', [batch('early', 'h1', T + 1500), batch('now', 'h2')]))
    await sender(busBatch('push-deliveries', [batch('far', 'h3', T + 86_400_000)]))
    expect(clock.slept).toEqual([1500, MAX_HOLD_MS])
    expect(file.calls.map((c) => c.map((d) => d.installUuid))).toEqual([['h1', 'h2'], ['h3']])
    const rows = await store.query<{ install_uuid: string; first: string | number }>(
      `SELECT install_uuid, toUnixTimestamp64Milli(first_attempt_at) AS first FROM push_deliveries
       WHERE app_id = 'hold' ORDER BY install_uuid`,
    )
    expect(rows.map((r) => [r.install_uuid, Number(r.first)])).toEqual([
      ['h1', T + 1500],
      ['h2', T + 1500],
      ['h3', T + 1500 + MAX_HOLD_MS],
    ])
  })

  it('sends through sendGroups by (batch, platform), shares each group outcome, retries a retry group through send', async () => {
    // Android's group (first install g2) is answered retry: its deliveries go on through send()
    // from attempt 2; iOS's is sent; a second request's iOS group (first install h1) failed.
    const file = new ScriptedGroupsTransport(
      'file',
      () => ({ status: 'sent' }),
      (first) =>
        first === 'g2'
          ? { status: 'retry', error: 'push file: ENOSPC', retryAfterMs: 3000 }
          : first === 'h1'
            ? { status: 'failed', error: 'invalid app id' }
            : { status: 'sent' },
    )
    const clock = { ...manualClock(T), random: () => 0.5 }
    const sender = pushSender({
      store,
      transports: resolver({ ios: file, android: file }),
      rate: new SendRate(0, clock),
      retry: { attempts: 3, deadlineMs: 60_000, baseDelayMs: 100, maxDelayMs: 1000 },
      clock,
    })
    await sender(
      busBatch('push-deliveries', [
        sendBatch('grp', [
          ['g1', 'iOS'],
          ['g2', 'Android'],
          ['g3', 'iOS'],
          ['g4', 'android'],
          ['g5', 'Windows'],
        ]),
        sendBatch('grp2', [['h1', 'iOS']]),
      ]),
    )
    expect(file.groupCalls).toEqual([
      [
        { platform: 'ios', installs: ['g1', 'g3'], deliveryIds: ['grp:g1', 'grp:g3'] },
        { platform: 'android', installs: ['g2', 'g4'], deliveryIds: ['grp:g2', 'grp:g4'] },
        { platform: 'ios', installs: ['h1'], deliveryIds: ['grp2:h1'] },
      ],
    ])
    // The retry waited for Retry-After, then sent the two as attempt 2, with their ids and tokens.
    expect(clock.slept).toEqual([3000])
    expect(file.calls.map((c) => c.map((d) => [d.deliveryId, d.pushToken, d.attempt, d.platform]))).toEqual([
      [
        ['grp:g2', 'tok-g2', 2, 'android'],
        ['grp:g4', 'tok-g4', 2, 'android'],
      ],
    ])
    expect(
      (await deliveries('grp')).map((r) => [
        r.install_uuid,
        r.status,
        Number(r.attempts),
        r.platform,
        r.error,
      ]),
    ).toEqual([
      ['g1', 'sent', 1, 'ios', ''],
      ['g2', 'sent', 2, 'android', ''],
      ['g3', 'sent', 1, 'ios', ''],
      ['g4', 'sent', 2, 'android', ''],
      ['g5', 'failed', 0, 'Windows', 'unsupported platform "Windows"'],
    ])
    expect(
      (await deliveries('grp2')).map((r) => [r.install_uuid, r.status, Number(r.attempts), r.error]),
    ).toEqual([['h1', 'failed', 1, 'invalid app id']])
  })

  it('a sendGroups call that throws is retried through send, and gives up within the attempts', async () => {
    const file = new ScriptedGroupsTransport(
      'file',
      () => 'throw',
      () => 'throw',
    )
    const clock = { ...manualClock(T), random: () => 0.5 }
    const sender = pushSender({
      store,
      transports: resolver({ ios: file }),
      rate: new SendRate(0, clock),
      retry: { attempts: 2, deadlineMs: 60_000, baseDelayMs: 100, maxDelayMs: 1000 },
      clock,
    })
    await sender(busBatch('push-deliveries', [sendBatch('grp3', [['k1', 'iOS']])]))
    expect(file.groupCalls).toHaveLength(1)
    expect(file.calls).toHaveLength(1)
    expect(clock.slept).toEqual([50])
    expect((await deliveries('grp3')).map((r) => [r.status, Number(r.attempts), r.error])).toEqual([
      ['failed', 2, 'Error: connect ECONNREFUSED (gave up after 2 attempts)'],
    ])
  })

  it('retries a send that answers another number of outcomes than deliveries, and says so when it gives up', async () => {
    // One outcome for a call of two: which delivery it belongs to is unknown, so both are retried.
    class Miscounting extends ScriptedTransport {
      override async send(deliveries: readonly PushDelivery[]): Promise<DeliveryOutcome[]> {
        this.calls.push([...deliveries])
        return [{ status: 'sent' }]
      }
    }
    const short = new Miscounting('webhook', () => ({ status: 'sent' }))
    const clock = { ...manualClock(T), random: () => 0.5 }
    const sender = pushSender({
      store,
      transports: resolver({ ios: short, android: short }),
      rate: new SendRate(0, clock),
      retry: { attempts: 2, deadlineMs: 60_000, baseDelayMs: 100, maxDelayMs: 1000 },
      clock,
    })
    await sender(
      busBatch('push-deliveries', [
        sendBatch('s2m', [
          ['m1', 'iOS'],
          ['m2', 'iOS'],
        ]),
      ]),
    )
    expect(short.calls.map((c) => c.length)).toEqual([2, 2])
    const error =
      'Error: the webhook transport answered 1 outcomes for 2 deliveries (gave up after 2 attempts)'
    expect((await deliveries('s2m')).map((r) => [r.status, Number(r.attempts), r.error])).toEqual([
      ['failed', 2, error],
      ['failed', 2, error],
    ])
  })

  it('gives up after the attempts allowed, recording the last error; a send that throws is retried', async () => {
    const down = new ScriptedTransport('webhook', () => 'throw')
    const clock = { ...manualClock(T), random: () => 0.5 }
    const sender = pushSender({
      store,
      transports: resolver({ ios: down, android: down }),
      rate: new SendRate(0, clock),
      retry: { attempts: 3, deadlineMs: 60_000, baseDelayMs: 100, maxDelayMs: 1000 },
      clock,
    })
    await sender(busBatch('push-deliveries', [sendBatch('s2', [['d1', 'iOS']])]))
    expect(down.calls).toHaveLength(3)
    expect((await deliveries('s2')).map((r) => [r.status, Number(r.attempts), r.error])).toEqual([
      ['failed', 3, 'Error: connect ECONNREFUSED (gave up after 3 attempts)'],
    ])
    expect(clock.slept).toEqual([50, 100])
  })

  it('holds deliveries of one app to the send rate', async () => {
    const file = new ScriptedTransport('file', () => ({ status: 'sent' }))
    const clock = { ...manualClock(T), random: () => 0.5 }
    const sender = pushSender({
      store,
      transports: resolver({ ios: file }),
      rate: new SendRate(10, clock),
      retry: { attempts: 1, deadlineMs: 0, baseDelayMs: 1, maxDelayMs: 1 },
      clock,
      chunkSize: 10,
    })
    const installs = Array.from(
      { length: 40 },
      (_, i) => [`r${String(i).padStart(2, '0')}`, 'iOS'] as [string, string],
    )
    await sender(busBatch('push-deliveries', [sendBatch('s3', installs)]))
    expect(file.calls.map((c) => c.length)).toEqual([10, 10, 10, 10])
    // 40 at 10/s, the first 10 at once: the last 10 go 3 s after the first.
    expect(clock.now() - T).toBe(3000)
    expect(await deliveries('s3')).toHaveLength(40)
  })

  it('holds deliveries of one app to the send rate through sendGroups too', async () => {
    const file = new ScriptedGroupsTransport(
      'file',
      () => ({ status: 'sent' }),
      () => ({ status: 'sent' }),
    )
    const clock = { ...manualClock(T), random: () => 0.5 }
    const sender = pushSender({
      store,
      transports: resolver({ ios: file }),
      rate: new SendRate(10, clock),
      retry: { attempts: 1, deadlineMs: 0, baseDelayMs: 1, maxDelayMs: 1 },
      clock,
      recordEvery: 10,
    })
    const installs = Array.from(
      { length: 40 },
      (_, i) => [`q${String(i).padStart(2, '0')}`, 'iOS'] as [string, string],
    )
    await sender(busBatch('push-deliveries', [sendBatch('s3g', installs)]))
    expect(file.groupCalls.map((c) => c.flatMap((g) => g.installs).length)).toEqual([10, 10, 10, 10])
    // 40 at 10/s, the first 10 at once: the last 10 go 3 s after the first.
    expect(clock.now() - T).toBe(3000)
    expect(await deliveries('s3g')).toHaveLength(40)
  })

  it('dead-letters a batch record that does not decode', async () => {
    const sender = pushSender({
      store,
      transports: resolver({}),
      rate: new SendRate(0, manualClock(T)),
      retry: { attempts: 1, deadlineMs: 0, baseDelayMs: 1, maxDelayMs: 1 },
    })
    const report = await sender(busBatch('push-deliveries', [Buffer.from('not json')]))
    expect(
      report.outcomes.map((o) => [o.outcome.kind, String((o.outcome as { error: Error }).error.message)]),
    ).toEqual([['dead-letter', expect.stringContaining('delivery batch is not JSON')]])
  })
})
