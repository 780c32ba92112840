import { describe, expect, it } from 'vitest'
import { attributeEvent, isAttributionReject, serverRows } from '../../pipelines/events/attribute-event.ts'
import { copyRow, decodeBlock, encodeBlock, rowLength } from '../../pipelines/events/event-block.ts'
import { classifyBatch } from '../../pipelines/events/classify-stored.ts'
import {
  eventKey,
  eventRowFromRowBinary,
  packEvents,
  type DeviceDims,
} from '../../pipelines/events/event-row.ts'
import {
  mintTransactionId,
  parseTransactionId,
  transactionKey,
} from '../../services/edge/uploads/transaction-id.ts'
import { applyRowToCustomer, applyRowToDevice, emptyDevice } from '../../pipelines/sdk/device-state.ts'
import type { SdkRow } from '../../pipelines/sdk/validate-sdk-row.ts'
import type { RowParts, WriterItem } from '../../pipelines/events/writer-item.ts'

const item = (app: string, uuid: string, tx: string, line: number): WriterItem => ({
  app,
  uuid,
  upload: { tx, recv: 0, org: 1, source: 'server' },
  line,
  value: Buffer.from(`{"uuid":"${uuid}"}`),
})

describe('classifyBatch (exactly-once rule)', () => {
  it.each([
    {
      name: 'new uuids are stored',
      items: [item('a', 'u1', 't1', 1), item('a', 'u2', 't1', 2)],
      stored: [],
      expected: ['store', 'store'],
    },
    {
      name: 'same uuid in another app is another event',
      items: [item('a', 'u1', 't1', 1), item('b', 'u1', 't2', 1)],
      stored: [],
      expected: ['store', 'store'],
    },
    {
      name: 'a later copy from another upload is a duplicate',
      items: [item('a', 'u1', 't1', 1), item('a', 'u1', 't2', 4)],
      stored: [],
      expected: ['store', 'duplicate'],
    },
    {
      name: 'a copy of the same upload and line is a replay',
      items: [item('a', 'u1', 't1', 1), item('a', 'u1', 't1', 1)],
      stored: [],
      expected: ['store', 'replay'],
    },
    {
      name: 'stored by an earlier upload: duplicate',
      items: [item('a', 'u1', 't2', 1)],
      stored: [['a', 'u1', 't1']],
      expected: ['duplicate'],
    },
    {
      name: 'stored by this same upload (crash before commit): replay',
      items: [item('a', 'u1', 't1', 3)],
      stored: [['a', 'u1', 't1']],
      expected: ['replay'],
    },
  ])('$name', ({ items, stored, expected }) => {
    const already = new Map(stored.map(([app, uuid, tx]) => [eventKey(app!, uuid!), { tx: tx! }]))
    expect(classifyBatch(items, already).map((d) => d.kind)).toEqual(expected)
  })

  it('names the transaction that stored the first copy', () => {
    const [decision] = classifyBatch(
      [item('a', 'u1', 't2', 1)],
      new Map([[eventKey('a', 'u1'), { tx: 't1' }]]),
    )
    expect(decision).toMatchObject({ kind: 'duplicate', firstTransaction: 't1' })
  })
})

const dims: DeviceDims = {
  install_uuid: 'i1',
  device_uuid: 'd1',
  session_uuid: 's1',
  country: 'fr',
  language: 'fr',
  app_version: '1.0',
  os_version: '17',
  platform: 'iOS',
  model: 'iPhone',
  device_timezone: 'Europe/Paris',
}
const event = {
  line: 2,
  app_uuid: 'app',
  customer_id: 'alice',
  event_name: 'Buy',
  event_time: 1000,
  uuid: 'u'.repeat(32),
  attributes: { a: '1' },
  ltv_change: 5,
}

describe('attributeEvent', () => {
  const ctx = {
    orgId: 1,
    appOrg: new Map([
      ['app', 1],
      ['foreign', 2],
    ]),
    devices: new Map([['app', new Map([['alice', dims]])]]),
  }
  type TestEvent = Omit<typeof event, 'attributes'> & { attributes: Record<string, string> }
  const attribute = (e: TestEvent) => attributeEvent(packEvents([e]), 0, ctx)

  /** A RowBinary row (EVENT_COLUMNS) read back as an object of its columns; every byte is used. */
  const columnsOf = (row: Buffer): Record<string, unknown> => ({ ...eventRowFromRowBinary(row) })

  /** Attributes every event and returns the rows exactly as the writer gets them from the block. */
  const storedRows = (events: TestEvent[], tails = new Map<DeviceDims, Buffer>()) => {
    const packed = packEvents(events)
    const rowOf = serverRows(packed, { receivedAt: 2000, transactionId: 'tx' }, tails)
    const upload = { tx: 'tx', recv: 2000, org: 1, source: 'server' as const }
    const block = events.map((_, i) => {
      const result = attributeEvent(packed, i, ctx)
      if (isAttributionReject(result)) throw new Error(`event ${i} not attributed`)
      return {
        app: 'app',
        uuid: packed.uuid[i]!,
        line: packed.line[i]!,
        upload,
        row: rowOf(i, 'app', result),
      }
    })
    return decodeBlock(encodeBlock(block)).map((item) => item.value)
  }

  it("writes a row's parts into the object given (the event store's item), the same bytes as a row of its own", () => {
    const events = [event, { ...event, uuid: '00000000-0000-4000-8000-000000000009', event_name: 'Sell' }]
    const packed = packEvents(events)
    const rowOf = serverRows(packed, { receivedAt: 2000, transactionId: 'tx' }, new Map())
    const device = attribute(event) as DeviceDims
    for (let i = 0; i < events.length; i++) {
      const own = rowOf(i, 'app', device)
      const into = {
        head: Buffer.alloc(0),
        source: Buffer.alloc(0),
        start: -1,
        end: -1,
        tail: Buffer.alloc(0),
        app: 'x',
      }
      expect(rowOf(i, 'app', device, into)).toBe(into)
      expect(into.app).toBe('x')
      const bytes = (row: RowParts) => {
        const out = Buffer.alloc(rowLength(row))
        copyRow(row, out, 0)
        return out
      }
      expect(bytes(into).equals(bytes(own))).toBe(true)
      expect(columnsOf(bytes(into))).toMatchObject({
        uuid: events[i]!.uuid,
        event_name: events[i]!.event_name,
      })
    }
  })

  it("tags the event with its customer's last device", () => {
    expect(attribute(event)).toBe(dims)
    const [row] = storedRows([event])
    expect(columnsOf(row!)).toEqual({
      app_id: 'app',
      uuid: event.uuid,
      customer_id: 'alice',
      event_name: 'Buy',
      event_time: 1000,
      received_at: 2000,
      attributes: { a: '1' },
      ltv_change: 5,
      ...dims,
      source: 'server',
      transaction_id: 'tx',
    })
  })

  it('keeps each row to its own event when an upload has many, with awkward strings and numbers', () => {
    const odd = {
      ...event,
      uuid: 'v'.repeat(32),
      event_name: 'quote " backslash \\ newline \n tab \t \u2028 é 🎉',
      attributes: { 'k"ey': 'v\\al\u0000', empty: '' },
      ltv_change: -0,
      event_time: 1_700_000_000_123,
    }
    const plain = { ...event, uuid: 'w'.repeat(32), attributes: {} }
    const rows = storedRows([event, odd, plain])
    expect(rows).toHaveLength(3)
    const parsed = rows.map(columnsOf)
    expect(parsed.map((p) => p.uuid)).toEqual([event.uuid, odd.uuid, plain.uuid])
    expect(parsed[1]).toMatchObject({
      event_name: odd.event_name,
      attributes: odd.attributes,
      event_time: 1_700_000_000_123,
    })
    expect(Object.is(parsed[1]!.ltv_change, 0)).toBe(true)
    expect(parsed[2]).toMatchObject({ attributes: {}, ltv_change: 5, customer_id: 'alice', ...dims })
  })

  it("serialises a device's values once for every upload of a batch that shares the cache", () => {
    const tails = new Map<DeviceDims, Buffer>()
    const first = storedRows([event], tails)
    const second = storedRows([{ ...event, uuid: 'x'.repeat(32) }], tails)
    expect([...tails.keys()]).toEqual([dims])
    expect(columnsOf(second[0]!)).toMatchObject({ ...dims, uuid: 'x'.repeat(32) })
    expect(columnsOf(first[0]!)).toMatchObject({ ...dims, uuid: event.uuid })
  })

  it.each([
    ['an app of another org', { ...event, app_uuid: 'foreign' }, 'unknown_app'],
    ['an app that does not exist', { ...event, app_uuid: 'nope' }, 'unknown_app'],
    ['a customer with no device', { ...event, customer_id: 'bob' }, 'unknown_customer'],
  ])('rejects %s', (_name, e, reason) => {
    expect(attribute(e)).toMatchObject({ kind: 'reject', line: 2, uuid: event.uuid, reason })
  })
})

const row = (o: Partial<SdkRow>): SdkRow =>
  ({
    line: 1,
    type: 's',
    uuid: 'r',
    install_uuid: 'i1',
    at_millis: 1000,
    customer_id: '',
    name: '',
    attributes: {},
    device_uuid: '',
    session_uuid: '',
    app_ver: '',
    os_ver: '',
    platform: '',
    model: '',
    country: '',
    language: '',
    device_timezone: '',
    push_token: '',
    push_status: '',
    ...o,
  }) as SdkRow

describe('device and customer state', () => {
  it('moves only forward in time, and empty fields never erase known values', () => {
    let device = emptyDevice('app', 'i1')
    device = applyRowToDevice(
      device,
      row({ at_millis: 1000, country: 'fr', app_ver: '1.0', customer_id: 'alice' }),
    )
    device = applyRowToDevice(device, row({ at_millis: 3000, app_ver: '2.0' }))
    device = applyRowToDevice(device, row({ at_millis: 2000, country: 'de' }))
    expect(device).toMatchObject({
      last_active_at: 3000,
      country: 'fr',
      app_version: '2.0',
      customer_id: 'alice',
    })
  })

  it('keeps the advertising id last reported, with its ad-tracking limit', () => {
    let device = emptyDevice('app', 'i1')
    device = applyRowToDevice(
      device,
      row({ at_millis: 1000, advertising_id: 'AD-1', limit_advertising: true }),
    )
    device = applyRowToDevice(device, row({ at_millis: 2000 }))
    expect(device).toMatchObject({ advertising_id: 'AD-1', limit_advertising: 1 })
    device = applyRowToDevice(device, row({ at_millis: 3000, advertising_id: 'AD-2' }))
    expect(device).toMatchObject({ advertising_id: 'AD-2', limit_advertising: 0 })
    // An older row changes nothing.
    device = applyRowToDevice(
      device,
      row({ at_millis: 2500, advertising_id: 'AD-0', limit_advertising: true }),
    )
    expect(device).toMatchObject({ advertising_id: 'AD-2', limit_advertising: 0 })
  })

  it("follows the customer's latest device and keeps first/last session dates", () => {
    const old = applyRowToDevice(
      emptyDevice('app', 'old'),
      row({ install_uuid: 'old', at_millis: 1000, country: 'de' }),
    )
    const fresh = applyRowToDevice(
      emptyDevice('app', 'new'),
      row({ install_uuid: 'new', at_millis: 5000, country: 'us' }),
    )
    let customer = applyRowToCustomer(
      undefined,
      row({ install_uuid: 'old', at_millis: 1000 }),
      old,
      'app',
      'bob',
    )
    customer = applyRowToCustomer(
      customer,
      row({ install_uuid: 'new', at_millis: 5000 }),
      fresh,
      'app',
      'bob',
    )
    // A late upload from the old device does not take the customer back to it.
    customer = applyRowToCustomer(customer, row({ install_uuid: 'old', at_millis: 500 }), old, 'app', 'bob')
    expect(customer).toMatchObject({
      install_uuid: 'new',
      country: 'us',
      last_active_at: 5000,
      first_session_at: 500,
      last_session_at: 5000,
    })
  })
})

describe('transaction ids', () => {
  const key = transactionKey('a deployment secret')

  it('carry their org and receipt time, and verify', () => {
    const id = mintTransactionId(key, 42, 1_795_300_000_123)
    expect(id).toMatch(/^[A-Za-z0-9_-]{43}$/)
    expect(parseTransactionId(key, id)).toEqual({ orgId: 42, receivedAt: 1_795_300_000_123 })
  })

  it('refuse forged, altered or foreign ids', () => {
    const id = mintTransactionId(key, 42, 1_795_300_000_123)
    const altered = (id[0] === 'A' ? 'B' : 'A') + id.slice(1)
    expect(parseTransactionId(key, altered)).toBeUndefined()
    expect(parseTransactionId(transactionKey('another secret'), id)).toBeUndefined()
    expect(parseTransactionId(key, 'short')).toBeUndefined()
  })
})
