import { describe, expect, it } from 'vitest'
import {
  decodeBatch,
  deliveryId,
  encodeBatch,
  encodeBatches,
  pushPlatform,
  targetRows,
} from '../../pipelines/push/delivery-batch.ts'
import {
  buildBatch,
  compareInstall,
  customerTargets,
  decidePlanning,
  type CustomerDevice,
  type RequestState,
} from '../../pipelines/push/plan.ts'
import { SendRate } from '../../pipelines/push/send-rate.ts'
import type { PushRequestRecord } from '../../schemas/push.ts'
import { manualClock } from '../helpers/manual-clock.ts'

const DAY = 24 * 60 * 60 * 1000
const T = 1_700_000_000_000

const record = (o: Partial<PushRequestRecord> = {}): PushRequestRecord => ({
  v: 1,
  requestId: 'r1',
  appId: 'app',
  orgId: 1,
  receivedAt: T,
  campaignKey: null,
  targetType: 'broadcast',
  allDevices: false,
  messages: [{ alert: 'hi' }],
  origin: 'api',
  ...o,
})

const state = (o: Partial<RequestState> = {}): RequestState => ({
  generation: 0,
  receivedAt: T,
  status: 'planned',
  targeted: 3,
  unmatched: 0,
  pages: 1,
  cursor: 'i3',
  ...o,
})

describe('decidePlanning: de-duplication within 24 hours, resumption, generations', () => {
  it('plans a request id never seen as generation 0', () => {
    expect(decidePlanning(undefined, record())).toEqual({ kind: 'plan', generation: 0, resume: undefined })
  })

  it('skips a planned request redelivered, and a repeat within 24 hours of its first use', () => {
    expect(decidePlanning(state(), record())).toEqual({ kind: 'skip', reason: 'planned' })
    expect(decidePlanning(state(), record({ receivedAt: T + DAY - 1 }))).toEqual({
      kind: 'skip',
      reason: 'duplicate',
    })
    // Another edge's clock may be behind: still the same request.
    expect(decidePlanning(state(), record({ receivedAt: T - 5000 }))).toEqual({
      kind: 'skip',
      reason: 'duplicate',
    })
  })

  it('resumes a request whose planning was cut short, from its recorded state', () => {
    const half = state({ status: 'planning', pages: 4, cursor: 'i400' })
    expect(decidePlanning(half, record())).toEqual({ kind: 'plan', generation: 0, resume: half })
    expect(decidePlanning(half, record({ receivedAt: T + 1000 }))).toEqual({
      kind: 'plan',
      generation: 0,
      resume: half,
    })
  })

  it('starts the next generation once 24 hours have passed since the latest use', () => {
    expect(decidePlanning(state({ generation: 2 }), record({ receivedAt: T + DAY }))).toEqual({
      kind: 'plan',
      generation: 3,
      resume: undefined,
    })
  })
})

describe('customerTargets: most recent device, all devices, unmatched customers', () => {
  const dev = (install: string, customer: string, at: number): CustomerDevice => ({
    install_uuid: install,
    customer_id: customer,
    platform: 'iOS',
    push_token: `t-${install}`,
    last_active_at: at,
  })
  const devices = [dev('i9', 'ann', 300), dev('i2', 'ann', 100), dev('i5', 'bob', 50), dev('i7', 'bob', 50)]
  const customers = (ids: string[], allDevices = false) =>
    record({
      targetType: 'customer_id',
      allDevices,
      messages: ids.map((id, i) => ({ target: id, alert: `m${i}` })),
    })

  it("picks each customer's most recently active device (ties: the larger install), sorted by install", () => {
    const { targets, unmatched } = customerTargets(customers(['bob', 'ann', 'zed']), devices)
    expect(targets.map((t) => [t.device.install_uuid, t.message])).toEqual([
      ['i7', 0],
      ['i9', 1],
    ])
    expect(unmatched).toBe(1)
  })

  it('with all_devices, every device of the customer', () => {
    const { targets, unmatched } = customerTargets(customers(['ann', 'bob'], true), devices)
    expect(targets.map((t) => [t.device.install_uuid, t.message])).toEqual([
      ['i2', 0],
      ['i5', 1],
      ['i7', 1],
      ['i9', 0],
    ])
    expect(unmatched).toBe(0)
  })

  it('never targets one install twice in a request', () => {
    const shared = [dev('i1', 'ann', 10), { ...dev('i1', 'bob', 10) }]
    expect(customerTargets(customers(['ann', 'bob'], true), shared).targets).toHaveLength(1)
  })
})

describe('delivery batches', () => {
  it('carry only the messages their targets use, with their index in the request; ids are stable', () => {
    const r = record({
      requestId: 'req',
      targetType: 'customer_id',
      campaignKey: 'k',
      messages: [
        { target: 'a', alert: 'A' },
        { target: 'b', alert: 'B', ios: { badge: 2 } },
        { target: 'c', alert: 'C' },
      ],
    })
    const device = (install: string) => ({
      install_uuid: install,
      customer_id: 'x',
      platform: 'iOS',
      push_token: 't',
    })
    const batch = buildBatch(
      r,
      2,
      5,
      [
        { device: device('i1'), message: 2 },
        { device: device('i2'), message: 1 },
        { device: device('i3'), message: 2 },
      ],
      T,
    )
    expect(batch.batchId).toBe('req:2:5')
    expect(batch.messages).toEqual([{ alert: 'C' }, { alert: 'B', ios: { badge: 2 } }])
    expect(batch.messageIndexes).toEqual([2, 1])
    expect(targetRows(batch.targets)).toEqual([
      ['i1', 'x', 'iOS', 't', 0],
      ['i2', 'x', 'iOS', 't', 1],
      ['i3', 'x', 'iOS', 't', 0],
    ])
    const decoded = decodeBatch(encodeBatch(batch).value)
    expect(decoded).toEqual({ ok: true, batch })
    expect(encodeBatch(batch).key).toBe('app')
  })

  it('split into halves, deterministically, when a record would be too big for the bus', () => {
    const r = record({
      requestId: 'big',
      targetType: 'customer_id',
      messages: Array.from({ length: 8 }, (_, i) => ({
        target: `c${i}`,
        alert: `message ${i} ${'x'.repeat(200)}`,
      })),
    })
    const device = (i: number) => ({
      install_uuid: `i${i}`,
      customer_id: `c${i}`,
      platform: 'iOS',
      push_token: 't'.repeat(100),
    })
    const batch = buildBatch(
      r,
      0,
      3,
      Array.from({ length: 8 }, (_, i) => ({ device: device(i), message: i })),
      T,
    )
    expect(encodeBatches(batch)).toEqual([encodeBatch(batch)])
    const parts = encodeBatches(batch, 1200).map(
      (m) => (decodeBatch(m.value) as { batch: typeof batch }).batch,
    )
    expect(parts.map((p) => p.batchId)).toEqual(['big:0:3.0.0', 'big:0:3.0.1', 'big:0:3.1.0', 'big:0:3.1.1'])
    expect(
      parts.flatMap((p) =>
        targetRows(p.targets).map((t) => [t[0], p.messageIndexes[t[4]], p.messages[t[4]]!.alert]),
      ),
    ).toEqual(
      targetRows(batch.targets).map((t) => [t[0], batch.messageIndexes[t[4]], batch.messages[t[4]]!.alert]),
    )
    expect(encodeBatches(batch, 1200).every((m) => m.value.length <= 1200)).toBe(true)
    expect(encodeBatches(batch, 1200)).toEqual(encodeBatches(batch, 1200))
  })

  it('refuse to decode what is not a version-1 or version-2 batch, or whose columns do not line up', () => {
    expect(decodeBatch(Buffer.from('{'))).toEqual({ ok: false, reason: 'delivery batch is not JSON' })
    expect(decodeBatch(Buffer.from('{"v":3}'))).toEqual({
      ok: false,
      reason: 'not a version-1 or version-2 delivery batch',
    })
    const good = buildBatch(
      record(),
      0,
      0,
      [{ device: { install_uuid: 'i', customer_id: 'c', platform: 'iOS', push_token: 't' }, message: 0 }],
      T,
    )
    const malformed = (targets: unknown) => decodeBatch(Buffer.from(JSON.stringify({ ...good, targets })))
    const reason = { ok: false, reason: 'delivery batch holds a malformed target' }
    // A message index the batch does not hold, a column one short, a token that is not a string.
    expect(malformed({ ...good.targets, message: [3] })).toEqual(reason)
    expect(malformed({ ...good.targets, customers: [] })).toEqual(reason)
    expect(malformed({ ...good.targets, tokens: [7] })).toEqual(reason)
    expect(malformed([['i', 'c', 'iOS', 't', 0]])).toEqual({
      ok: false,
      reason: 'delivery batch lacks its request, app, messages or targets',
    })
  })

  it('read a version-1 batch (one array per target, as workers before version 2 wrote it) as columns', () => {
    const v2 = buildBatch(
      record(),
      0,
      0,
      ['i1', 'i2'].map((i, n) => ({
        device: {
          install_uuid: i,
          customer_id: `c${n}`,
          platform: n ? 'Android' : 'iOS',
          push_token: `t${n}`,
        },
        message: 0,
      })),
      T,
    )
    const v1 = { ...v2, v: 1, targets: targetRows(v2.targets) }
    expect(v1.targets).toEqual([
      ['i1', 'c0', 'iOS', 't0', 0],
      ['i2', 'c1', 'Android', 't1', 0],
    ])
    expect(decodeBatch(Buffer.from(JSON.stringify(v1)))).toEqual({ ok: true, batch: v2 })
    expect(decodeBatch(Buffer.from(JSON.stringify({ ...v1, targets: [['i', 'c', 'iOS', 't', 3]] })))).toEqual(
      {
        ok: false,
        reason: 'delivery batch holds a malformed target',
      },
    )
  })

  it('delivery ids: the port form for generation 0, the generation added later', () => {
    expect(deliveryId('r', 0, 'i1')).toBe('r:i1')
    expect(deliveryId('r', 2, 'i1')).toBe('r~2:i1')
  })

  it('platforms as the SDK logs them map to the push platforms, others to none', () => {
    expect(['iOS', 'ios', 'IOS', 'iPadOS', 'Android', 'ANDROID', ' android '].map(pushPlatform)).toEqual([
      'ios',
      'ios',
      'ios',
      'ios',
      'android',
      'android',
      'android',
    ])
    expect(['Windows', '', 'web', 'tvOS'].map(pushPlatform)).toEqual([
      undefined,
      undefined,
      undefined,
      undefined,
    ])
  })

  it('installs compare by UTF-8 bytes, as the store orders them', () => {
    const ids = ['b', 'a', '\uFF5E', '\u{1F600}', 'A']
    const sorted = [...ids].sort(compareInstall)
    expect(sorted).toEqual([...ids].sort((x, y) => Buffer.compare(Buffer.from(x), Buffer.from(y))))
    expect(sorted.indexOf('\uFF5E')).toBeLessThan(sorted.indexOf('\u{1F600}'))
  })
})

describe('SendRate: deliveries per second per app', () => {
  it('lets one second of deliveries go at once, then spaces them at the rate, per app', async () => {
    const clock = manualClock(T)
    const rate = new SendRate(100, { now: () => clock.now(), sleep: (ms) => clock.sleep(ms) })
    await rate.acquire('a', 100)
    expect(clock.slept).toEqual([])
    // The next 50 wait until the first 100 have had their second... minus their own half.
    await rate.acquire('a', 50)
    expect(clock.slept).toEqual([500])
    await rate.acquire('a', 50)
    expect(clock.slept).toEqual([500, 500])
    // Another app has a rate of its own.
    await rate.acquire('b', 100)
    expect(clock.slept).toEqual([500, 500])
  })

  it('at 100/s, the last 50 of 1,000 deliveries go 9 s after the first (100 go at once)', async () => {
    const clock = manualClock(T)
    const rate = new SendRate(100, { now: () => clock.now(), sleep: (ms) => clock.sleep(ms) })
    for (let i = 0; i < 20; i++) await rate.acquire('a', 50)
    expect(clock.now() - T).toBe(9000)
  })

  it('0 means no limit', async () => {
    const clock = manualClock(T)
    const rate = new SendRate(0, { now: () => clock.now(), sleep: (ms) => clock.sleep(ms) })
    for (let i = 0; i < 10; i++) await rate.acquire('a', 1e6)
    expect(clock.slept).toEqual([])
  })
})
