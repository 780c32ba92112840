import { createHmac, timingSafeEqual } from 'node:crypto'
import { readFile, readdir } from 'node:fs/promises'
import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'
import { join } from 'node:path'
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest'
import { ApnsTransport } from '../../pipelines/connectors/push/apns-transport.ts'
import { FcmTransport } from '../../pipelines/connectors/push/fcm-transport.ts'
import { FileTransport } from '../../pipelines/connectors/push/file-transport.ts'
import { idempotencyKey, WebhookTransport } from '../../pipelines/connectors/push/webhook-transport.ts'
import { buildApnsPayload, uuidFrom } from '../../pipelines/push/apns-payload.ts'
import { apnsSettings, fcmSettings, webhookSettings } from '../../pipelines/push/transport-settings.ts'
import type { PushDelivery, PushMessage, PushTransport } from '../../pipelines/push/transport.ts'
import { p8Key, startApnsStandin, type ApnsStandin } from '../helpers/apns-standin.ts'
import { serviceAccount, startFcmStandin, type FcmStandin } from '../helpers/fcm-standin.ts'
import { tempDir } from '../helpers/temp.ts'

const delivery = (over: Partial<PushDelivery> & { pushToken: string }): PushDelivery => {
  const requestId = over.requestId ?? 'req-1'
  const installUuid = over.installUuid ?? `install-${over.pushToken}`
  return {
    deliveryId: `${requestId}:${installUuid}`,
    requestId,
    campaignKey: null,
    appId: 'acme-ios',
    installUuid,
    customerId: 'cust-1',
    platform: 'ios',
    message: { alert: 'Hello' },
    attempt: 1,
    ...over,
  }
}

/** A port nothing listens on: one just closed. */
async function closedPort(): Promise<number> {
  const server = createServer()
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const { port } = server.address() as AddressInfo
  await new Promise<void>((r) => server.close(() => r()))
  return port
}

const transports: PushTransport[] = []
afterEach(async () => {
  await Promise.all(transports.splice(0).map((t) => t.close()))
})
const keep = <T extends PushTransport>(t: T) => (transports.push(t), t)

describe('file transport', () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  beforeAll(async () => {
    dir = await tempDir('push-file')
  })
  afterAll(() => dir.cleanup())

  it('appends one JSON line per delivery under push/<app>/<UTC day>.jsonl, read back whole', async () => {
    const at = Date.UTC(2025, 2, 9, 23, 59, 59)
    const file = keep(new FileTransport({ dataDir: dir.path, clock: { now: () => at } }))
    const message: PushMessage = { alert: { title: 'T', body: 'B' }, ios: { badge: 1 } }
    const batch = [
      delivery({ pushToken: 'aa', message, campaignKey: 'spring' }),
      delivery({ pushToken: 'bb', appId: 'acme-android', platform: 'android', message: { alert: 'Hi' } }),
      delivery({ pushToken: 'cc', attempt: 2 }),
    ]
    expect(await file.send(batch)).toEqual([{ status: 'sent' }, { status: 'sent' }, { status: 'sent' }])
    // A second batch to the same file appends.
    expect(await file.send([delivery({ pushToken: 'dd', requestId: 'req-2' })])).toEqual([{ status: 'sent' }])

    const iosLines = (await readFile(join(dir.path, 'push', 'acme-ios', '2025-03-09.jsonl'), 'utf8'))
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>)
    expect(iosLines.map((l) => l.push_token)).toEqual(['aa', 'cc', 'dd'])
    expect(iosLines[0]).toEqual({
      delivery_id: 'req-1:install-aa',
      request_id: 'req-1',
      campaign_key: 'spring',
      app_id: 'acme-ios',
      install_uuid: 'install-aa',
      customer_id: 'cust-1',
      platform: 'ios',
      push_token: 'aa',
      attempt: 1,
      message,
      payload: { aps: { alert: { title: 'T', body: 'B' }, badge: 1, 'content-available': 1 } },
      written_at: '2025-03-09T23:59:59.000Z',
    })
    expect(iosLines[1]!.attempt).toBe(2)
    const android = JSON.parse(
      await readFile(join(dir.path, 'push', 'acme-android', '2025-03-09.jsonl'), 'utf8'),
    ) as Record<string, unknown>
    expect(android.payload).toEqual({
      token: 'bb',
      notification: { body: 'Hi' },
      android: { priority: 'NORMAL' },
    })
  })

  it('refuses an app id that would leave the push directory, and writes the others', async () => {
    const file = keep(new FileTransport({ dataDir: dir.path }))
    const outcomes = await file.send([
      delivery({ pushToken: 'x', appId: '../escape' }),
      delivery({ pushToken: 'y', appId: 'ok-app' }),
    ])
    expect(outcomes[0]).toEqual({ status: 'failed', error: 'invalid app id for a file name: "../escape"' })
    expect(outcomes[1]).toEqual({ status: 'sent' })
    expect(await readdir(join(dir.path, 'push'))).not.toContain('escape')
    expect(await readdir(dir.path)).toEqual(['push'])
  })

  it('keeps lines of concurrent batches whole', async () => {
    const file = keep(new FileTransport({ dataDir: dir.path, clock: { now: () => Date.UTC(2025, 0, 1) } }))
    const batches = Array.from({ length: 20 }, (_, b) =>
      Array.from({ length: 50 }, (_, i) =>
        delivery({ pushToken: `t${b}x${i}`, appId: 'busy', requestId: `r${b}` }),
      ),
    )
    await Promise.all(batches.map((batch) => file.send(batch)))
    const lines = (await readFile(join(dir.path, 'push', 'busy', '2025-01-01.jsonl'), 'utf8'))
      .trimEnd()
      .split('\n')
    expect(lines).toHaveLength(1000)
    expect(new Set(lines.map((l) => (JSON.parse(l) as { delivery_id: string }).delivery_id)).size).toBe(1000)
  })
})

describe('webhook transport', () => {
  const secret = 'whsec-0123456789abcdef'
  let receiver: {
    url: string
    requests: { headers: IncomingHttpHeaders; body: Buffer }[]
    answer: (n: number) => { status: number; headers?: Record<string, string>; delayMs?: number }
    close(): Promise<void>
  }
  beforeAll(async () => {
    const requests: { headers: IncomingHttpHeaders; body: Buffer }[] = []
    const state = {
      answer: (_n: number): { status: number; headers?: Record<string, string>; delayMs?: number } => ({
        status: 200,
      }),
    }
    const server = createServer((req, res) => {
      const chunks: Buffer[] = []
      req.on('data', (c: Buffer) => chunks.push(c))
      req.on('end', () => {
        requests.push({ headers: req.headers, body: Buffer.concat(chunks) })
        const a = state.answer(requests.length)
        setTimeout(() => {
          res.writeHead(a.status, a.headers ?? {})
          res.end()
        }, a.delayMs ?? 0)
      })
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    receiver = {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hooks/push`,
      requests,
      get answer() {
        return state.answer
      },
      set answer(f) {
        state.answer = f
      },
      close: async () => {
        server.closeAllConnections()
        await new Promise<void>((r) => server.close(() => r()))
      },
    }
  })
  afterAll(() => receiver.close())
  afterEach(() => {
    receiver.requests.length = 0
    receiver.answer = () => ({ status: 200 })
  })

  const transport = (over: Record<string, unknown> = {}) =>
    keep(new WebhookTransport(webhookSettings.parse({ url: receiver.url, secret, ...over })))

  /** What a receiver does: HMAC the raw body with the shared secret, compare in constant time. */
  const verified = (headers: IncomingHttpHeaders, body: Buffer) => {
    const expected = Buffer.from(`sha256=${createHmac('sha256', secret).update(body).digest('hex')}`)
    const got = Buffer.from(String(headers['x-sluice-signature']))
    return got.length === expected.length && timingSafeEqual(got, expected)
  }

  it('POSTs batches signed with the app secret, keyed by their delivery ids', async () => {
    const batch = Array.from({ length: 5 }, (_, i) => delivery({ pushToken: `tok${i}`, campaignKey: 'c1' }))
    const outcomes = await transport({ batch_size: 2 }).send(batch)
    expect(outcomes).toEqual(Array(5).fill({ status: 'sent' }))
    expect(receiver.requests).toHaveLength(3)
    const bodies = receiver.requests.map(
      (r) => JSON.parse(r.body.toString()) as { deliveries: { delivery_id: string }[] },
    )
    expect(bodies.flatMap((b) => b.deliveries.map((d) => d.delivery_id)).sort()).toEqual(
      batch.map((d) => d.deliveryId).sort(),
    )
    for (const [i, r] of receiver.requests.entries()) {
      expect(r.headers['content-type']).toBe('application/json')
      expect(verified(r.headers, r.body)).toBe(true)
      expect(r.headers['idempotency-key']).toBe(
        idempotencyKey(bodies[i]!.deliveries.map((d) => d.delivery_id)),
      )
    }
    const first = JSON.parse(receiver.requests.find((r) => r.body.includes('tok0'))!.body.toString()) as {
      deliveries: Record<string, unknown>[]
    }
    expect(first.deliveries[0]).toEqual({
      delivery_id: 'req-1:install-tok0',
      request_id: 'req-1',
      campaign_key: 'c1',
      app_id: 'acme-ios',
      install_uuid: 'install-tok0',
      customer_id: 'cust-1',
      platform: 'ios',
      push_token: 'tok0',
      attempt: 1,
      message: { alert: 'Hello' },
      payload: buildApnsPayload({ alert: 'Hello' }),
    })
    // A tampered body fails the receiver's check.
    expect(
      verified(receiver.requests[0]!.headers, Buffer.from(receiver.requests[0]!.body.toString() + ' ')),
    ).toBe(false)
  })

  it('a resend of the same deliveries carries the same Idempotency-Key, in any order', async () => {
    const batch = [delivery({ pushToken: 'a' }), delivery({ pushToken: 'b' })]
    const t = transport()
    await t.send(batch)
    await t.send([
      { ...batch[1]!, attempt: 2 },
      { ...batch[0]!, attempt: 2 },
    ])
    await t.send([delivery({ pushToken: 'c' })])
    const keys = receiver.requests.map((r) => r.headers['idempotency-key'])
    expect(keys[0]).toMatch(/^[0-9a-f]{64}$/)
    expect(keys[1]).toBe(keys[0])
    expect(keys[2]).not.toBe(keys[0])
  })

  it('5xx and 429 are retry (with Retry-After), other 4xx failed, a timeout retry', async () => {
    const t = transport({ timeout_ms: 300 })
    const one = [delivery({ pushToken: 'z' })]
    receiver.answer = () => ({ status: 503, headers: { 'Retry-After': '30' } })
    expect(await t.send(one)).toEqual([
      { status: 'retry', error: 'webhook answered 503', retryAfterMs: 30_000 },
    ])
    receiver.answer = () => ({ status: 500 })
    expect(await t.send(one)).toEqual([{ status: 'retry', error: 'webhook answered 500' }])
    receiver.answer = () => ({ status: 429, headers: { 'Retry-After': '2' } })
    expect(await t.send(one)).toEqual([
      { status: 'retry', error: 'webhook answered 429', retryAfterMs: 2000 },
    ])
    receiver.answer = () => ({ status: 410 })
    expect(await t.send(one)).toEqual([{ status: 'failed', error: 'webhook answered 410' }])
    receiver.answer = () => ({ status: 302, headers: { Location: 'http://example.invalid/' } })
    expect(await t.send(one)).toEqual([{ status: 'failed', error: 'webhook answered 302' }])
    receiver.answer = () => ({ status: 200, delayMs: 2000 })
    expect(await t.send(one)).toEqual([{ status: 'retry', error: 'webhook timed out after 300 ms' }])
  })

  it('an unreachable receiver is retry', async () => {
    const t = keep(
      new WebhookTransport(webhookSettings.parse({ url: `http://127.0.0.1:${await closedPort()}/`, secret })),
    )
    const [outcome] = await t.send([delivery({ pushToken: 'q' })])
    expect(outcome).toMatchObject({
      status: 'retry',
      error: expect.stringMatching(/^webhook request failed: .*ECONNREFUSED/),
    })
  })
})

describe('APNs transport (against a local HTTP/2 stand-in)', () => {
  const key = p8Key()
  const teamId = 'TEAM123456'
  const keyId = 'KEY1234567'
  let apns: ApnsStandin
  beforeAll(async () => {
    apns = await startApnsStandin({ teamId, keyId, publicKey: key.publicKey })
  })
  afterAll(() => apns.close())
  afterEach(() => apns.reset())

  const transport = (over: Record<string, unknown> = {}) =>
    keep(
      new ApnsTransport(
        apnsSettings.parse({ key: key.pem, key_id: keyId, team_id: teamId, topic: 'com.acme.app', ...over }),
        {
          endpoint: { host: apns.host, port: apns.port, ca: [apns.ca] },
          clock: { now: () => 1_800_000_000_000 },
        },
      ),
    )

  it('sends each delivery with token auth, the documented headers and the exact payload', async () => {
    const message: PushMessage = {
      alert: { title: 'Sale', subtitle: 'Today', body: '50% off' },
      ios: {
        sound: 'default',
        badge: 4,
        category: 'OFFER',
        mutable_content: true,
        extra: { ll_deep_link_url: 'app://sale' },
      },
    }
    const outcomes = await transport({ expiration_seconds: 3600 }).send([
      delivery({ pushToken: 'a1b2c3d4', message }),
      delivery({ pushToken: 'e5f6', message: { alert: '' }, requestId: 'req-silent' }),
    ])
    expect(outcomes).toEqual([{ status: 'sent' }, { status: 'sent' }])
    const byToken = new Map(apns.received.map((r) => [r.token, r]))
    const alert = byToken.get('a1b2c3d4')!
    expect(alert.path).toBe('/3/device/a1b2c3d4')
    expect(alert.jwt.header).toMatchObject({ alg: 'ES256', kid: keyId })
    expect(alert.jwt.claims).toMatchObject({ iss: teamId })
    expect(alert.headers).toMatchObject({
      'apns-topic': 'com.acme.app',
      'apns-push-type': 'alert',
      'apns-priority': '10',
      'apns-id': uuidFrom('req-1:install-a1b2c3d4'),
      'apns-collapse-id': 'req-1',
      'apns-expiration': String(1_800_000_000 + 3600),
    })
    expect(alert.body).toEqual({
      aps: {
        alert: { title: 'Sale', subtitle: 'Today', body: '50% off' },
        sound: 'default',
        badge: 4,
        category: 'OFFER',
        'content-available': 1,
        'mutable-content': 1,
      },
      ll_deep_link_url: 'app://sale',
    })
    const silent = byToken.get('e5f6')!
    expect(silent.headers).toMatchObject({ 'apns-push-type': 'background', 'apns-priority': '5' })
    expect(silent.body).toEqual({ aps: { 'content-available': 1 } })
  })

  it('maps every documented answer to its outcome', async () => {
    apns.answers.set('dead410', { status: 410, reason: 'Unregistered' })
    apns.answers.set('expired410', { status: 410, reason: 'ExpiredToken' })
    apns.answers.set('bad400', { status: 400, reason: 'BadDeviceToken' })
    apns.answers.set('topic400', { status: 400, reason: 'DeviceTokenNotForTopic' })
    apns.answers.set('big413', { status: 413, reason: 'PayloadTooLarge' })
    apns.answers.set('busy429', { status: 429, reason: 'TooManyRequests', retryAfter: '120' })
    apns.answers.set('down503', { status: 503, reason: 'ServiceUnavailable', retryAfter: '5' })
    apns.answers.set('oops500', { status: 500, reason: 'InternalServerError' })
    const tokens = [
      'ok1',
      'dead410',
      'expired410',
      'bad400',
      'topic400',
      'big413',
      'busy429',
      'down503',
      'oops500',
    ]
    const outcomes = await transport().send(tokens.map((t) => delivery({ pushToken: t })))
    expect(Object.fromEntries(tokens.map((t, i) => [t, outcomes[i]]))).toEqual({
      ok1: { status: 'sent' },
      dead410: { status: 'failed', error: 'APNs 410 Unregistered', invalidToken: true },
      expired410: { status: 'failed', error: 'APNs 410 ExpiredToken', invalidToken: true },
      bad400: { status: 'failed', error: 'APNs 400 BadDeviceToken', invalidToken: true },
      topic400: { status: 'failed', error: 'APNs 400 DeviceTokenNotForTopic' },
      big413: { status: 'failed', error: 'APNs 413 PayloadTooLarge' },
      busy429: { status: 'retry', error: 'APNs 429 TooManyRequests', retryAfterMs: 120_000 },
      down503: { status: 'retry', error: 'APNs 503 ServiceUnavailable', retryAfterMs: 5000 },
      oops500: { status: 'retry', error: expect.stringMatching(/^APNs 500 /) },
    })
  })

  it('a key the team does not own is refused (403 InvalidProviderToken): failed', async () => {
    const other = p8Key()
    const t = keep(
      new ApnsTransport(
        apnsSettings.parse({ key: other.pem, key_id: keyId, team_id: teamId, topic: 'com.acme.app' }),
        { endpoint: { host: apns.host, port: apns.port, ca: [apns.ca] } },
      ),
    )
    expect(await t.send([delivery({ pushToken: 'ab' })])).toEqual([
      { status: 'failed', error: 'APNs 403 InvalidProviderToken' },
    ])
  })

  it('multiplexes a batch on one connection with at most `concurrency` streams in flight', async () => {
    const t = transport({ concurrency: 8 })
    const batch = Array.from({ length: 200 }, (_, i) =>
      delivery({ pushToken: `ab${i.toString(16).padStart(4, '0')}` }),
    )
    const outcomes = await t.send(batch)
    expect(outcomes.every((o) => o.status === 'sent')).toBe(true)
    expect(apns.received).toHaveLength(200)
    expect(apns.maxConcurrent()).toBeLessThanOrEqual(8)
    expect(apns.connections()).toBe(1)
  })

  it('an unreachable APNs is retry', async () => {
    const t = keep(
      new ApnsTransport(apnsSettings.parse({ key: key.pem, key_id: keyId, team_id: teamId, topic: 't' }), {
        endpoint: { host: '127.0.0.1', port: await closedPort(), ca: [apns.ca] },
      }),
    )
    const [outcome] = await t.send([delivery({ pushToken: 'ab' })])
    expect(outcome).toMatchObject({ status: 'retry', error: expect.stringMatching(/^APNs: /) })
  })
})

describe('FCM transport (against local OAuth2 and FCM HTTP v1 stand-ins)', () => {
  const account = serviceAccount('acme-push')
  let fcm: FcmStandin
  beforeAll(async () => {
    fcm = await startFcmStandin({ clientEmail: account.json.client_email, publicKey: account.publicKey })
  })
  afterAll(() => fcm.close())
  afterEach(() => fcm.reset())

  const transport = (over: Record<string, unknown> = {}) =>
    keep(
      new FcmTransport(fcmSettings.parse({ service_account: account.json, ...over }), {
        endpoints: { baseUrl: fcm.baseUrl, tokenUrl: fcm.tokenUrl },
        clock: { now: () => Date.now() },
      }),
    )

  it('gets one access token by a signed service-account JWT and sends the exact HTTP v1 messages', async () => {
    const t = transport()
    const actions = [{ title: 'Open', deeplink: 'app://open' }]
    const outcomes = await t.send([
      delivery({
        pushToken: 'and-1',
        platform: 'android',
        message: {
          alert: { title: 'T', body: 'B' },
          android: { priority: 'high', extra: { ll_actions: actions, n: 1 } },
        },
      }),
      delivery({ pushToken: 'and-2', platform: 'android', message: { alert: '' } }),
    ])
    expect(outcomes).toEqual([{ status: 'sent' }, { status: 'sent' }])
    await t.send([delivery({ pushToken: 'and-3', platform: 'android' })])
    expect(fcm.tokenRequests).toHaveLength(1)
    expect(fcm.tokenRequests[0]!.grantType).toBe('urn:ietf:params:oauth:grant-type:jwt-bearer')
    expect(fcm.tokenRequests[0]!.claims).toMatchObject({
      iss: account.json.client_email,
      scope: 'https://www.googleapis.com/auth/firebase.messaging',
      aud: 'https://oauth2.googleapis.com/token',
    })
    const byToken = new Map(fcm.received.map((r) => [r.body.message.token, r]))
    expect(byToken.get('and-1')!.project).toBe('acme-push')
    expect(byToken.get('and-1')!.authorization).toMatch(/^Bearer ya29\./)
    expect(byToken.get('and-1')!.body).toEqual({
      message: {
        token: 'and-1',
        notification: { title: 'T', body: 'B' },
        data: { ll_actions: JSON.stringify(actions), n: '1' },
        android: { priority: 'HIGH' },
      },
    })
    expect(byToken.get('and-2')!.body).toEqual({
      message: { token: 'and-2', android: { priority: 'NORMAL' } },
    })
  })

  it('maps every documented error to its outcome', async () => {
    fcm.answers.set('gone', { kind: 'unregistered' })
    fcm.answers.set('malformed', { kind: 'invalid-token' })
    fcm.answers.set('other-project', { kind: 'sender-mismatch' })
    fcm.answers.set('quota', { kind: 'quota', retryAfter: '60' })
    fcm.answers.set('down', { kind: 'unavailable', retryAfter: '7' })
    fcm.answers.set('down-no-header', { kind: 'unavailable' })
    const tokens = ['fine', 'gone', 'malformed', 'other-project', 'quota', 'down', 'down-no-header']
    const outcomes = await transport().send(
      tokens.map((t) => delivery({ pushToken: t, platform: 'android' })),
    )
    expect(Object.fromEntries(tokens.map((t, i) => [t, outcomes[i]]))).toEqual({
      fine: { status: 'sent' },
      gone: {
        status: 'failed',
        error: 'FCM 404 UNREGISTERED: Requested entity was not found.',
        invalidToken: true,
      },
      malformed: {
        status: 'failed',
        error: 'FCM 400 INVALID_ARGUMENT: The registration token is not a valid FCM registration token',
        invalidToken: true,
      },
      'other-project': { status: 'failed', error: 'FCM 403 SENDER_ID_MISMATCH: SenderId mismatch' },
      quota: { status: 'retry', error: 'FCM 429 QUOTA_EXCEEDED: Quota exceeded.', retryAfterMs: 60_000 },
      down: {
        status: 'retry',
        error: 'FCM 503 UNAVAILABLE: The service is currently unavailable.',
        retryAfterMs: 7000,
      },
      'down-no-header': {
        status: 'retry',
        error: 'FCM 503 UNAVAILABLE: The service is currently unavailable.',
      },
    })
  })

  it('a payload FCM refuses (BadRequest naming a field) fails without invalidating the token', async () => {
    fcm.answers.set('big', { kind: 'payload-too-big' })
    const outcomes = await transport().send([delivery({ pushToken: 'big', platform: 'android' })])
    expect(outcomes).toEqual([{ status: 'failed', error: 'FCM 400 INVALID_ARGUMENT: Message is too big' }])
  })

  it('a refused access token is renewed once and the delivery sent', async () => {
    const t = transport()
    await t.send([delivery({ pushToken: 'warm', platform: 'android' })])
    fcm.answers.set('after-revoke', { kind: 'unauthenticated-once' })
    const outcomes = await t.send([delivery({ pushToken: 'after-revoke', platform: 'android' })])
    expect(outcomes).toEqual([{ status: 'sent' }])
    expect(fcm.tokenRequests).toHaveLength(2)
  })

  it('caps requests in flight at `concurrency`', async () => {
    const t = transport({ concurrency: 4 })
    const outcomes = await t.send(
      Array.from({ length: 60 }, (_, i) => delivery({ pushToken: `c${i}`, platform: 'android' })),
    )
    expect(outcomes.filter((o) => o.status === 'sent')).toHaveLength(60)
    expect(fcm.received).toHaveLength(60)
    expect(fcm.maxConcurrent()).toBeLessThanOrEqual(4)
  })

  it('no access token (a key Google does not know): nothing attempted, send throws without the key', async () => {
    const stranger = serviceAccount('acme-push')
    const t = keep(
      new FcmTransport(
        fcmSettings.parse({ service_account: { ...stranger.json, client_email: account.json.client_email } }),
        { endpoints: { baseUrl: fcm.baseUrl, tokenUrl: fcm.tokenUrl } },
      ),
    )
    const error = await t
      .send([delivery({ pushToken: 'x', platform: 'android' })])
      .catch((e: unknown) => e as Error)
    expect(error).toBeInstanceOf(Error)
    expect((error as Error).message).toMatch(/^FCM: no access token for push@acme-push/)
    expect((error as Error).message).toMatch(/invalid_grant/)
    expect((error as Error).message).not.toContain('PRIVATE KEY')
    expect(fcm.received).toHaveLength(0)
  })
})
