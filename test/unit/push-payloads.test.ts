import { describe, expect, it } from 'vitest'
import { buildApnsPayload, buildApnsRequest, uuidFrom } from '../../pipelines/push/apns-payload.ts'
import { buildFcmMessage, buildFcmRequest, dataStrings } from '../../pipelines/push/fcm-payload.ts'
import type { PushMessage } from '../../pipelines/push/transport.ts'

const delivery = (message: PushMessage, requestId = 'req-1') => ({
  deliveryId: `${requestId}:install-1`,
  requestId,
  pushToken: 'a1b2c3',
  message,
})

describe('APNs payload', () => {
  it('a string alert with the defaults: content-available on, mutable-content off', () => {
    expect(buildApnsPayload({ alert: 'Hello' })).toEqual({ aps: { alert: 'Hello', 'content-available': 1 } })
  })

  it('every iOS option, the object alert and the extra keys beside aps', () => {
    const body = buildApnsPayload({
      alert: { title: 'Sale', subtitle: 'Today only', body: '50% off' },
      ios: {
        sound: 'chime.caf',
        badge: 3,
        category: 'OFFER',
        content_available: false,
        mutable_content: true,
        extra: {
          ll_deep_link_url: 'app://sale',
          ll_attachment_url: 'https://cdn.example/x.png',
          ll_attachment_type: 'image/png',
          n: 2,
          aps: { alert: 'hijack' },
        },
      },
    })
    expect(JSON.stringify(body)).toBe(
      JSON.stringify({
        aps: {
          alert: { title: 'Sale', subtitle: 'Today only', body: '50% off' },
          sound: 'chime.caf',
          badge: 3,
          category: 'OFFER',
          'mutable-content': 1,
        },
        ll_deep_link_url: 'app://sale',
        ll_attachment_url: 'https://cdn.example/x.png',
        ll_attachment_type: 'image/png',
        n: 2,
      }),
    )
  })

  it('an object alert without subtitle has no subtitle key; badge 0 is kept', () => {
    expect(buildApnsPayload({ alert: { title: 'T', body: 'B' }, ios: { badge: 0 } })).toEqual({
      aps: { alert: { title: 'T', body: 'B' }, badge: 0, 'content-available': 1 },
    })
  })

  it('a silent push carries only content-available in aps, and its extras', () => {
    expect(
      buildApnsPayload({
        alert: '',
        ios: { sound: 'x', badge: 1, category: 'c', mutable_content: true, extra: { k: 'v' } },
      }),
    ).toEqual({ aps: { 'content-available': 1 }, k: 'v' })
    expect(buildApnsPayload({ alert: '', ios: { content_available: false } })).toEqual({ aps: {} })
  })

  it('headers: topic, push type and priority by silence, a stable apns-id, the request as collapse id', () => {
    const alert = buildApnsRequest(delivery({ alert: 'Hi' }), { topic: 'com.acme.app' })
    expect(alert.path).toBe('/3/device/a1b2c3')
    expect(alert.headers).toEqual({
      'apns-topic': 'com.acme.app',
      'apns-push-type': 'alert',
      'apns-priority': '10',
      'apns-id': uuidFrom('req-1:install-1'),
      'apns-collapse-id': 'req-1',
    })
    const silent = buildApnsRequest(delivery({ alert: '' }), {
      topic: 'com.acme.app',
      expiresAt: 1_700_000_123.9,
    })
    expect(silent.headers['apns-push-type']).toBe('background')
    expect(silent.headers['apns-priority']).toBe('5')
    expect(silent.headers['apns-expiration']).toBe('1700000123')
  })

  it('apns-id is a canonical UUID, the same for the same delivery and different for another', () => {
    const id = uuidFrom('r:1')
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/)
    expect(uuidFrom('r:1')).toBe(id)
    expect(uuidFrom('r:2')).not.toBe(id)
  })

  it('a request id over 64 bytes collapses by its sha256', () => {
    const long = 'r'.repeat(65)
    const id = buildApnsRequest(delivery({ alert: 'x' }, long), { topic: 't' }).headers['apns-collapse-id']
    expect(id).toMatch(/^[0-9a-f]{64}$/)
    expect(
      buildApnsRequest(delivery({ alert: 'x' }, 'r'.repeat(64)), { topic: 't' }).headers['apns-collapse-id'],
    ).toBe('r'.repeat(64))
  })
})

describe('FCM HTTP v1 payload', () => {
  it('a string alert: notification body, NORMAL priority by default, no data', () => {
    expect(
      buildFcmRequest({ pushToken: 'tok', platform: 'android', message: { alert: 'Hello' } }, 'my-proj'),
    ).toEqual({
      path: '/v1/projects/my-proj/messages:send',
      body: { message: { token: 'tok', notification: { body: 'Hello' }, android: { priority: 'NORMAL' } } },
    })
  })

  it('an object alert, high priority, and extras as strings (ll_actions JSON-encoded)', () => {
    const actions = [
      { title: 'Open', deeplink: 'app://open' },
      { title: 'Later', icon: 'ic_later' },
    ]
    const message = buildFcmMessage(
      {
        alert: { title: 'Sale', subtitle: 'iOS only', body: '50% off' },
        android: {
          priority: 'high',
          extra: {
            ll_deep_link_url: 'app://sale',
            ll_attachment_url: 'https://x/y.png',
            ll_actions: actions,
            n: 3,
            b: true,
          },
        },
      },
      'tok',
      'android',
    )
    expect(JSON.stringify(message)).toBe(
      JSON.stringify({
        token: 'tok',
        notification: { title: 'Sale', body: '50% off' },
        data: {
          ll_deep_link_url: 'app://sale',
          ll_attachment_url: 'https://x/y.png',
          ll_actions: '[{"title":"Open","deeplink":"app://open"},{"title":"Later","icon":"ic_later"}]',
          n: '3',
          b: 'true',
        },
        android: { priority: 'HIGH' },
      }),
    )
    expect(JSON.parse(message.data!.ll_actions!)).toEqual(actions)
  })

  it('a silent push is data-only; explicit normal priority is NORMAL', () => {
    expect(
      buildFcmMessage({ alert: '', android: { priority: 'normal', extra: { k: 'v' } } }, 't', 'android'),
    ).toEqual({
      token: 't',
      data: { k: 'v' },
      android: { priority: 'NORMAL' },
    })
  })

  it('data values are strings only; an empty extra sends no data', () => {
    expect(dataStrings({ s: 's', o: { a: 1 }, nil: null, u: undefined })).toEqual({
      s: 's',
      o: '{"a":1}',
      nil: 'null',
    })
    expect(dataStrings({})).toBeUndefined()
    expect(buildFcmMessage({ alert: 'x', android: { extra: {} } }, 't', 'android').data).toBeUndefined()
  })

  it('an iOS device through FCM gets the APNs body as apns.payload', () => {
    const message: PushMessage = { alert: 'Hi', ios: { badge: 2, extra: { ll_deep_link_url: 'app://x' } } }
    expect(buildFcmMessage(message, 'ios-tok', 'ios')).toEqual({
      token: 'ios-tok',
      apns: {
        headers: { 'apns-push-type': 'alert', 'apns-priority': '10' },
        payload: { aps: { alert: 'Hi', badge: 2, 'content-available': 1 }, ll_deep_link_url: 'app://x' },
      },
    })
    expect(buildFcmMessage({ alert: '' }, 'ios-tok', 'ios').apns!.headers).toEqual({
      'apns-push-type': 'background',
      'apns-priority': '5',
    })
  })

  it('the project id is escaped in the path', () => {
    expect(
      buildFcmRequest({ pushToken: 't', platform: 'android', message: { alert: 'x' } }, 'a/b').path,
    ).toBe('/v1/projects/a%2Fb/messages:send')
  })
})
