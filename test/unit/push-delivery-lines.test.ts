import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import {
  DELIVERY_LINE_MARKERS,
  DeliveryLineBytes,
  deliveryLineTemplate,
  LineBuffer,
} from '../../pipelines/connectors/push/delivery-lines.ts'
import { FileTransport } from '../../pipelines/connectors/push/file-transport.ts'
import { deliveryRecord } from '../../pipelines/connectors/push/delivery-record.ts'
import type { DeliveryGroup, PushDelivery, PushMessage } from '../../pipelines/push/transport.ts'

// Any text, lone surrogates, control characters and quotes included: JSON escapes them all.
const text = fc.string({ unit: 'binary', maxLength: 24 })
const extraValue = fc.oneof(
  text,
  fc.integer(),
  fc.boolean(),
  fc.constant(null),
  fc.array(text, { maxLength: 3 }),
)
const extra = fc.dictionary(text, extraValue, { maxKeys: 4 })

const message: fc.Arbitrary<PushMessage> = fc.record(
  {
    alert: fc.oneof(
      fc.constant(''),
      text,
      fc.record({ title: text, subtitle: text, body: text }, { requiredKeys: ['title', 'body'] }),
    ),
    ios: fc.record(
      {
        sound: text,
        badge: fc.nat(),
        category: text,
        content_available: fc.boolean(),
        mutable_content: fc.boolean(),
        extra,
      },
      { requiredKeys: [] },
    ),
    android: fc.record(
      { priority: fc.constantFrom('high' as const, 'normal' as const), extra },
      { requiredKeys: [] },
    ),
  },
  { requiredKeys: ['alert'] },
)

const shared = fc.record({
  requestId: text,
  campaignKey: fc.option(text, { nil: null }),
  appId: text,
  platform: fc.constantFrom('ios' as const, 'android' as const),
  message,
  attempt: fc.integer({ min: 1, max: 5 }),
})
const ids = fc.record({ deliveryId: text, installUuid: text, customerId: text, pushToken: text })

const perDelivery = (d: PushDelivery, writtenAt: string) =>
  JSON.stringify({ ...deliveryRecord(d), written_at: writtenAt })

describe('delivery line templates', () => {
  it('give the bytes of the per-delivery record for every device of a message', () => {
    fc.assert(
      fc.property(shared, ids, fc.array(ids, { minLength: 1, maxLength: 5 }), (s, sampleIds, others) => {
        const writtenAt = '2026-11-23T12:00:00.000Z'
        const line = deliveryLineTemplate({ ...s, ...sampleIds }, { written_at: writtenAt })
        expect(line).toBeDefined()
        for (const o of [sampleIds, ...others])
          expect(line!({ ...o })).toBe(perDelivery({ ...s, ...o }, writtenAt))
      }),
      { numRuns: 400 },
    )
  })

  it('carry the token twice on Android (the line and the FCM payload), the ids once', () => {
    const s: PushDelivery = {
      deliveryId: 'r1:i1',
      requestId: 'r1',
      campaignKey: 'spring',
      appId: 'acme',
      installUuid: 'i1',
      customerId: 'c1',
      platform: 'android',
      pushToken: 'tok-1',
      message: { alert: { title: 'Sale', body: '50% off' }, android: { priority: 'high' } },
      attempt: 1,
    }
    const line = deliveryLineTemplate(s)!
    const out = line({ deliveryId: 'r1:i"2', installUuid: 'i"2', customerId: 'c\n2', pushToken: 'tok\\2' })
    expect(JSON.parse(out)).toEqual({
      delivery_id: 'r1:i"2',
      request_id: 'r1',
      campaign_key: 'spring',
      app_id: 'acme',
      install_uuid: 'i"2',
      customer_id: 'c\n2',
      platform: 'android',
      push_token: 'tok\\2',
      attempt: 1,
      message: s.message,
      payload: {
        token: 'tok\\2',
        notification: { title: 'Sale', body: '50% off' },
        android: { priority: 'HIGH' },
      },
    })
  })

  it('is refused when the message itself contains a marker, and the file transport writes the line anyway', async () => {
    const s: PushDelivery = {
      deliveryId: 'r:i',
      requestId: 'r',
      campaignKey: null,
      appId: 'acme',
      installUuid: 'i',
      customerId: 'c',
      platform: 'ios',
      pushToken: 't',
      // A whole string equal to a marker: the one text a template could take for its slot.
      message: {
        alert: DELIVERY_LINE_MARKERS.customerId,
        ios: { extra: { x: `look: ${DELIVERY_LINE_MARKERS.pushToken}` } },
      },
      attempt: 1,
    }
    expect(deliveryLineTemplate(s)).toBeUndefined()
    const dir = await mkdtemp(join(tmpdir(), 'push-lines-'))
    try {
      const at = Date.parse('2026-11-23T12:00:00.000Z')
      const transport = new FileTransport({ dataDir: dir, clock: { now: () => at } })
      const other = { ...s, deliveryId: 'r:j', installUuid: 'j', customerId: 'd', pushToken: 'u' }
      expect(await transport.send([s, other])).toEqual([{ status: 'sent' }, { status: 'sent' }])
      const written = await readFile(transport.pathFor('acme', at), 'utf8')
      expect(written).toBe(
        `${perDelivery(s, '2026-11-23T12:00:00.000Z')}\n${perDelivery(other, '2026-11-23T12:00:00.000Z')}\n`,
      )
      expect(JSON.parse(written.split('\n')[1]!)).toMatchObject({ customer_id: 'd', message: s.message })
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('make the file transport write the per-delivery bytes for a batch of two apps, platforms and messages', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'push-lines-'))
    try {
      const at = Date.parse('2026-11-23T12:00:00.000Z')
      const transport = new FileTransport({ dataDir: dir, clock: { now: () => at } })
      const m1: PushMessage = {
        alert: { title: 'T', body: 'B' },
        ios: { badge: 2 },
        android: { priority: 'high' },
      }
      const m2: PushMessage = { alert: '' }
      const deliveries: PushDelivery[] = Array.from({ length: 12 }, (_, i) => ({
        deliveryId: `r:${i}`,
        requestId: 'r',
        campaignKey: 'k',
        appId: i % 3 === 0 ? 'app-b' : 'app-a',
        installUuid: `inst-${i}`,
        customerId: `cust-${i}`,
        platform: i % 2 === 0 ? 'ios' : 'android',
        pushToken: `tok-${i}`,
        message: i % 4 === 0 ? m2 : m1,
        attempt: 1,
      }))
      const outcomes = await transport.send(deliveries)
      expect(outcomes.every((o) => o.status === 'sent')).toBe(true)
      for (const app of ['app-a', 'app-b']) {
        const expected = deliveries
          .filter((d) => d.appId === app)
          .map((d) => `${perDelivery(d, '2026-11-23T12:00:00.000Z')}\n`)
          .join('')
        expect(await readFile(transport.pathFor(app, at), 'utf8')).toBe(expected)
      }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('written as bytes from the columns, give the UTF-8 of the per-delivery record and a newline', () => {
    // Ids of every kind: printable ASCII (the fast path), quotes, backslashes, controls, non-ASCII,
    // lone surrogates (JSON.stringify escapes them), in one buffer that has to grow.
    const id = fc.oneof(fc.string({ unit: 'binary', maxLength: 40 }), fc.stringMatching(/^[ -~]{0,64}$/))
    const idsOf = fc.record({ installUuid: id, customerId: id, pushToken: id })
    fc.assert(
      fc.property(shared, fc.array(idsOf, { minLength: 1, maxLength: 6 }), (s, devices) => {
        const writtenAt = '2026-11-23T12:00:00.000Z'
        // The prefix as deliveryId makes it: the request id (any text) and a colon.
        const prefix = `${s.requestId}:`
        const withIds = devices.map((d) => ({ ...s, ...d, deliveryId: prefix + d.installUuid }))
        const bytes = DeliveryLineBytes.of(withIds[0]!, { written_at: writtenAt })
        expect(bytes).toBeDefined()
        const out = new LineBuffer(16)
        for (const d of withIds) bytes!.write(out, prefix, d.installUuid, d.customerId, d.pushToken)
        const expected = withIds.map((d) => `${perDelivery(d, writtenAt)}\n`).join('')
        expect(out.view().equals(Buffer.from(expected))).toBe(true)
      }),
      { numRuns: 400 },
    )
  })

  it('make sendGroups write the bytes send writes for the same deliveries, a message with a marker included', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'push-lines-'))
    try {
      const at = Date.parse('2026-11-23T12:00:00.000Z')
      const byGroups = new FileTransport({ dataDir: join(dir, 'groups'), clock: { now: () => at } })
      const bySend = new FileTransport({ dataDir: join(dir, 'send'), clock: { now: () => at } })
      const messages: PushMessage[] = [
        { alert: { title: 'T', body: 'B\u00e9' }, ios: { badge: 2 }, android: { priority: 'high' } },
        { alert: '' },
        { alert: DELIVERY_LINE_MARKERS.customerId },
      ]
      const n = 30
      const columns = {
        installs: Array.from({ length: n }, (_, i) => (i === 7 ? 'inst-"7\u00fc' : `inst-${i}`)),
        customers: Array.from({ length: n }, (_, i) => (i === 9 ? 'c\n9' : `cust-${i}`)),
        tokens: Array.from({ length: n }, (_, i) => `tok-${i}`),
        message: Array.from({ length: n }, (_, i) => i % 3),
      }
      const group = (appId: string, platform: 'ios' | 'android', positions: number[]): DeliveryGroup => ({
        requestId: 'r',
        deliveryIdPrefix: 'r~1:',
        campaignKey: 'k',
        appId,
        platform,
        attempt: 1,
        messages,
        ...columns,
        at: positions,
      })
      const groups = [
        group('app-a', 'ios', [0, 2, 4, 6, 8, 10, 12]),
        group('app-a', 'android', [1, 3, 5, 7, 9, 11]),
        group('app-b', 'ios', [14, 16, 18]),
        group('../x', 'ios', [20]),
      ]
      expect(await byGroups.sendGroups(groups)).toEqual([
        { status: 'sent' },
        { status: 'sent' },
        { status: 'sent' },
        { status: 'failed', error: 'invalid app id for a file name: "../x"' },
      ])
      const deliveries: PushDelivery[] = groups.slice(0, 3).flatMap((g) =>
        g.at.map((p) => ({
          deliveryId: `r~1:${columns.installs[p]!}`,
          requestId: 'r',
          campaignKey: 'k',
          appId: g.appId,
          installUuid: columns.installs[p]!,
          customerId: columns.customers[p]!,
          platform: g.platform,
          pushToken: columns.tokens[p]!,
          message: messages[columns.message[p]!]!,
          attempt: 1,
        })),
      )
      await bySend.send(deliveries)
      // A second call reuses the first's line buffers: the file holds both calls' lines, whole.
      await byGroups.sendGroups(groups.slice(0, 3))
      await bySend.send(deliveries)
      for (const app of ['app-a', 'app-b']) {
        const written = await readFile(byGroups.pathFor(app, at))
        expect(written.equals(await readFile(bySend.pathFor(app, at)))).toBe(true)
        const expected = deliveries
          .filter((d) => d.appId === app)
          .map((d) => `${perDelivery(d, '2026-11-23T12:00:00.000Z')}\n`)
          .join('')
        expect(written.toString('utf8')).toBe(expected + expected)
      }
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('write a file again after its directory was removed between writes', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'push-lines-'))
    try {
      const at = Date.parse('2026-11-23T12:00:00.000Z')
      const transport = new FileTransport({ dataDir: dir, clock: { now: () => at } })
      const d = (i: number): PushDelivery => ({
        deliveryId: `r:${i}`,
        requestId: 'r',
        campaignKey: null,
        appId: 'acme',
        installUuid: `${i}`,
        customerId: 'c',
        platform: 'ios',
        pushToken: 't',
        message: { alert: 'hi' },
        attempt: 1,
      })
      expect(await transport.send([d(1)])).toEqual([{ status: 'sent' }])
      await rm(join(dir, 'push'), { recursive: true })
      expect(await transport.send([d(2)])).toEqual([{ status: 'sent' }])
      expect(await readFile(transport.pathFor('acme', at), 'utf8')).toBe(
        `${perDelivery(d(2), '2026-11-23T12:00:00.000Z')}\n`,
      )
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })
})
