import { createHmac } from 'node:crypto'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { expect } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import type { PushDelivery, PushPlatform } from '../../pipelines/push/transport.ts'
import { ControlTransportResolver } from '../../services/push/transport-resolver.ts'
import { p8Key, startApnsStandin } from '../helpers/apns-standin.ts'
import { adminHeaders } from '../helpers/edge.ts'
import { serviceAccount, startFcmStandin } from '../helpers/fcm-standin.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { tempDir } from '../helpers/temp.ts'

/**
 * Push transport configuration, the same way in both modes: set, list (masked), remove through the
 * admin API (control commands applied by the control plane), the rows in the store, and a
 * TransportResolver over that store handing out transports that deliver to local receivers.
 */
export async function runPushTransportScenario(sluice: InProcessSluice, store: Store, suffix: string) {
  const appId = `pt-${suffix}`
  const otherApp = `pt-other-${suffix}`
  await sluice.tenant(`push-transports-${suffix}`, [appId, otherApp])
  const api = async (
    method: string,
    path: string,
    body?: unknown,
    headers: Record<string, string> = adminHeaders,
  ) => {
    const res = await fetch(`${sluice.url}/admin/v1${path}`, {
      method,
      headers,
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    const text = await res.text()
    return { status: res.status, body: text === '' ? undefined : (JSON.parse(text) as unknown) }
  }
  const base = `/apps/${appId}/push/transports`

  // Local receivers: a webhook endpoint, an APNs stand-in, FCM and OAuth2 stand-ins.
  const hooks: { signature: string; key: string; body: string }[] = []
  const hookServer = createServer((req, res) => {
    let body = ''
    req.on('data', (c: Buffer) => (body += c.toString()))
    req.on('end', () => {
      hooks.push({
        signature: String(req.headers['x-sluice-signature']),
        key: String(req.headers['idempotency-key']),
        body,
      })
      res.writeHead(204).end()
    })
  })
  await new Promise<void>((r) => hookServer.listen(0, '127.0.0.1', r))
  const hookUrl = `http://127.0.0.1:${(hookServer.address() as AddressInfo).port}/push`
  const p8 = p8Key()
  const apns = await startApnsStandin({ teamId: 'TEAM123456', keyId: 'KEY1234567', publicKey: p8.publicKey })
  const account = serviceAccount(`proj-${suffix}`)
  const fcm = await startFcmStandin({ clientEmail: account.json.client_email, publicKey: account.publicKey })
  const dataDir = await tempDir('push-resolver')
  const resolver = new ControlTransportResolver({
    store,
    dataDir: dataDir.path,
    cacheTtlMs: 0,
    endpoints: {
      apns: { host: apns.host, port: apns.port, ca: [apns.ca] },
      fcm: { baseUrl: fcm.baseUrl, tokenUrl: fcm.tokenUrl },
    },
  })
  const deliver = async (platform: PushPlatform, token: string) => {
    const transport = await resolver.transportFor(appId, platform)
    if (!transport) return { kind: undefined, outcomes: [] }
    const d: PushDelivery = {
      deliveryId: `r-${token}:i-${token}`,
      requestId: `r-${token}`,
      campaignKey: null,
      appId,
      installUuid: `i-${token}`,
      customerId: 'c1',
      platform,
      pushToken: token,
      message: { alert: `to ${token}` },
      attempt: 1,
    }
    return { kind: transport.kind, outcomes: await transport.send([d]) }
  }

  try {
    // Nothing set: the file transport for both platforms.
    expect(await api('GET', base)).toEqual({
      status: 200,
      body: {
        app_id: appId,
        transports: [
          { platform: 'ios', kind: 'file', settings: {}, default: true },
          { platform: 'android', kind: 'file', settings: {}, default: true },
        ],
      },
    })
    expect(await resolver.platformsOf(appId)).toEqual(['ios', 'android'])
    expect(await deliver('ios', 'f1')).toEqual({ kind: 'file', outcomes: [{ status: 'sent' }] })

    // Refusals: auth, unknown app, platform, kind, settings (each problem named), APNs on Android.
    expect((await api('GET', base, undefined, {})).status).toBe(401)
    expect(await api('GET', '/apps/no-such-app/push/transports')).toEqual({
      status: 404,
      body: { error: 'app no-such-app not found', errors: ['app no-such-app not found'] },
    })
    expect((await api('PUT', `${base}/windows`, { kind: 'file' })).status).toBe(400)
    const badKind = await api('PUT', `${base}/ios`, { kind: 'pigeon' })
    expect(badKind).toEqual({
      status: 400,
      body: {
        error: 'kind: must be one of file, webhook, apns, fcm',
        errors: ['kind: must be one of file, webhook, apns, fcm'],
      },
    })
    const badSettings = await api('PUT', `${base}/all`, {
      kind: 'webhook',
      settings: { url: 'ftp://x', secret: 'short' },
    })
    expect(badSettings).toEqual({
      status: 400,
      body: {
        error: 'settings.url: must be an http(s) URL; settings.secret: must be at least 16 characters',
        errors: ['settings.url: must be an http(s) URL', 'settings.secret: must be at least 16 characters'],
      },
    })
    const apnsSettings = {
      key: p8.pem,
      key_id: 'KEY1234567',
      team_id: 'TEAM123456',
      topic: `com.acme.${suffix}`,
    }
    expect(await api('PUT', `${base}/all`, { kind: 'apns', settings: apnsSettings })).toMatchObject({
      status: 400,
      body: { error: 'apns cannot deliver to android' },
    })

    // A webhook for both platforms: answered and listed masked, stored in full.
    const secret = `whsec-${suffix}-0123456789abcdef`
    const set = await api('PUT', `${base}/all`, { kind: 'webhook', settings: { url: hookUrl, secret } })
    expect(set.status).toBe(200)
    const maskedWebhook = {
      url: hookUrl,
      secret: `****${secret.slice(-4)}`,
      timeout_ms: 10_000,
      batch_size: 100,
    }
    expect(set.body).toEqual({
      app_id: appId,
      transports: ['ios', 'android'].map((platform) => ({
        platform,
        kind: 'webhook',
        settings: maskedWebhook,
        updated_at: expect.any(String),
      })),
    })
    const listed = await api('GET', base)
    expect(listed.body).toEqual(set.body)
    expect(JSON.stringify(listed.body)).not.toContain(secret)
    const rows = await store.query<{
      platform: string
      kind: string
      settings: string
      org_id: number | string
    }>(
      `SELECT platform, kind, settings, org_id FROM push_transports FINAL WHERE app_id = {app:String} ORDER BY platform`,
      { app: appId },
    )
    expect(rows.map((r) => [r.platform, r.kind, JSON.parse(r.settings) as unknown])).toEqual([
      ['android', 'webhook', { url: hookUrl, secret, timeout_ms: 10_000, batch_size: 100 }],
      ['ios', 'webhook', { url: hookUrl, secret, timeout_ms: 10_000, batch_size: 100 }],
    ])
    // The other app of the org still has the default.
    expect(
      (
        (await api('GET', `/apps/${otherApp}/push/transports`)).body as {
          transports: { default?: boolean }[]
        }
      ).transports.every((t) => t.default),
    ).toBe(true)

    expect(await deliver('android', 'w1')).toEqual({ kind: 'webhook', outcomes: [{ status: 'sent' }] })
    expect(hooks).toHaveLength(1)
    expect(hooks[0]!.signature).toBe(
      `sha256=${createHmac('sha256', secret).update(hooks[0]!.body).digest('hex')}`,
    )
    expect(
      (JSON.parse(hooks[0]!.body) as { deliveries: { push_token: string }[] }).deliveries[0]!.push_token,
    ).toBe('w1')

    // APNs for iOS, FCM for Android: each delivered by its own transport, to its stand-in.
    const apnsSet = await api('PUT', `${base}/ios`, {
      kind: 'apns',
      settings: { ...apnsSettings, environment: 'sandbox' },
    })
    expect(apnsSet.status).toBe(200)
    expect(JSON.stringify(apnsSet.body)).not.toContain('PRIVATE KEY')
    const fcmSet = await api('PUT', `${base}/android`, {
      kind: 'fcm',
      settings: { service_account: JSON.stringify(account.json) },
    })
    expect(fcmSet.status).toBe(200)
    expect(JSON.stringify(fcmSet.body)).not.toContain('PRIVATE KEY')
    expect(await deliver('ios', 'abc123')).toEqual({ kind: 'apns', outcomes: [{ status: 'sent' }] })
    expect(apns.received.map((r) => [r.token, r.headers['apns-topic'], r.body])).toEqual([
      ['abc123', `com.acme.${suffix}`, { aps: { alert: 'to abc123', 'content-available': 1 } }],
    ])
    expect(await deliver('android', 'fcm-1')).toEqual({ kind: 'fcm', outcomes: [{ status: 'sent' }] })
    expect(fcm.received.map((r) => [r.project, r.body.message.token])).toEqual([[`proj-${suffix}`, 'fcm-1']])
    const ios = await resolver.transportFor(appId, 'ios')
    expect(await resolver.transportFor(appId, 'ios')).toBe(ios)

    // Remove Android: only iOS delivers now; a second remove is 404.
    expect((await api('DELETE', `${base}/android`)).status).toBe(204)
    expect(await api('DELETE', `${base}/android`)).toMatchObject({ status: 404 })
    expect(await resolver.platformsOf(appId)).toEqual(['ios'])
    expect(await resolver.transportFor(appId, 'android')).toBeUndefined()
    expect(
      ((await api('GET', base)).body as { transports: { platform: string }[] }).transports.map(
        (t) => t.platform,
      ),
    ).toEqual(['ios'])

    // Remove iOS too: back to the file default for both.
    expect((await api('DELETE', `${base}/all`)).status).toBe(204)
    expect(await resolver.platformsOf(appId)).toEqual(['ios', 'android'])
    expect((await resolver.transportFor(appId, 'ios'))?.kind).toBe('file')
  } finally {
    await resolver.close()
    await apns.close()
    await fcm.close()
    hookServer.closeAllConnections()
    await new Promise<void>((r) => hookServer.close(() => r()))
    await dataDir.cleanup()
  }
}
