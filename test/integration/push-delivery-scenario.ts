import { fileURLToPath } from 'node:url'
import { expect } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { p8Key, startApnsStandin, type ApnsStandin } from '../helpers/apns-standin.ts'
import { adminHeaders } from '../helpers/edge.ts'
import { serviceAccount, startFcmStandin, type FcmStandin } from '../helpers/fcm-standin.ts'
import { postSdk, sdkReceiptDone, sessionRow } from '../helpers/ingestion-scenario.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'

/**
 * Push requests delivered end to end through configured transports: the push endpoint, the
 * planner, the sender and the process's TransportResolver (createTransportResolver, pointed at
 * local APNs and FCM stand-ins by SLUICE_APNS_URL / SLUICE_FCM_URL / SLUICE_FCM_TOKEN_URL), with
 * tokens the services report dead written to invalid_push_tokens and never targeted again.
 */
export interface DeliveryStandins {
  apns: ApnsStandin
  fcm: FcmStandin
  p8: ReturnType<typeof p8Key>
  account: ReturnType<typeof serviceAccount>
  /** The Sluice environment that points the transports at the stand-ins. */
  env: Record<string, string>
  close(): Promise<void>
}

const CA_FILE = fileURLToPath(new URL('../fixtures/tls/cert-a.pem', import.meta.url))

export async function startDeliveryStandins(): Promise<DeliveryStandins> {
  const p8 = p8Key()
  const account = serviceAccount('acme-e2e')
  const apns = await startApnsStandin({ teamId: 'TEAM123456', keyId: 'KEY1234567', publicKey: p8.publicKey })
  const fcm = await startFcmStandin({ clientEmail: account.json.client_email, publicKey: account.publicKey })
  return {
    apns,
    fcm,
    p8,
    account,
    env: {
      SLUICE_APNS_URL: `https://${apns.host}:${apns.port}`,
      SLUICE_APNS_CA_FILE: CA_FILE,
      SLUICE_FCM_URL: fcm.baseUrl,
      SLUICE_FCM_TOKEN_URL: fcm.tokenUrl,
    },
    async close() {
      await apns.close()
      await fcm.close()
    },
  }
}

interface DeliveryRow {
  install_uuid: string
  platform: string
  transport: string
  status: string
  error: string
}

export async function runPushDeliveryScenario(
  sluice: InProcessSluice,
  store: Store,
  standins: DeliveryStandins,
  suffix: string,
) {
  const app = `pd-${suffix}`
  const tenant = await sluice.tenant(`push-delivery-${suffix}`, [app])
  const admin = (method: string, path: string, body: unknown) =>
    fetch(`${sluice.url}/admin/v1${path}`, { method, headers: adminHeaders, body: JSON.stringify(body) })
  expect(
    (
      await admin('PUT', `/apps/${app}/push/transports/ios`, {
        kind: 'apns',
        settings: {
          key: standins.p8.pem,
          key_id: 'KEY1234567',
          team_id: 'TEAM123456',
          topic: `com.acme.${suffix}`,
        },
      })
    ).status,
  ).toBe(200)
  expect(
    (
      await admin('PUT', `/apps/${app}/push/transports/android`, {
        kind: 'fcm',
        settings: { service_account: standins.account.json },
      })
    ).status,
  ).toBe(200)
  standins.apns.answers.set('dead0001', { status: 410, reason: 'Unregistered' })
  standins.fcm.answers.set(`gone-${suffix}`, { kind: 'unregistered' })

  const at = Date.now() - 60_000
  const device = (install: string, platform: string, token: string) => ({
    ...sessionRow({ install, customer: `c-${install}`, at, country: 'fr', model: 'm' }),
    platform,
    push_token: token,
    push_status: 'Enabled (Prominent)',
  })
  await sdkReceiptDone(
    sluice,
    app,
    await postSdk(sluice, app, [
      device('i-ok-ios', 'iOS', 'a0b1c2d3'),
      device('i-dead-ios', 'iOS', 'dead0001'),
      device('i-ok-and', 'Android', `ok-${suffix}`),
      device('i-gone-and', 'Android', `gone-${suffix}`),
    ]),
  )

  const push = async (requestId: string) => {
    const res = await fetch(`${sluice.url}/v2/push/${app}`, {
      method: 'POST',
      headers: { Authorization: tenant.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        request_id: requestId,
        target_type: 'broadcast',
        messages: [
          {
            alert: { title: 'Hi', body: 'There' },
            ios: { badge: 2, extra: { ll_deep_link_url: 'app://x' } },
            android: { priority: 'high', extra: { ll_actions: [{ title: 'Open', deeplink: 'app://o' }] } },
          },
        ],
      }),
    })
    expect(res.status).toBe(202)
  }
  const delivered = (requestId: string, count: number) =>
    waitFor(
      () =>
        store.query<DeliveryRow>(
          `SELECT install_uuid, platform, transport, status, error FROM push_deliveries
           WHERE app_id = {app:String} AND request_id = {id:String} ORDER BY install_uuid`,
          { app, id: requestId },
        ),
      (rows) => rows.length >= count,
      { what: `${count} deliveries of ${requestId}`, timeoutMs: 60_000 },
    )

  await push('first')
  expect(
    (await delivered('first', 4)).map((r) => [r.install_uuid, r.platform, r.transport, r.status, r.error]),
  ).toEqual([
    ['i-dead-ios', 'ios', 'apns', 'failed', 'APNs 410 Unregistered'],
    ['i-gone-and', 'android', 'fcm', 'failed', 'FCM 404 UNREGISTERED: Requested entity was not found.'],
    ['i-ok-and', 'android', 'fcm', 'sent', ''],
    ['i-ok-ios', 'ios', 'apns', 'sent', ''],
  ])
  const toIos = standins.apns.received.find((r) => r.token === 'a0b1c2d3')!
  expect(toIos.headers).toMatchObject({
    'apns-topic': `com.acme.${suffix}`,
    'apns-push-type': 'alert',
    'apns-collapse-id': 'first',
  })
  expect(toIos.body).toEqual({
    aps: { alert: { title: 'Hi', body: 'There' }, badge: 2, 'content-available': 1 },
    ll_deep_link_url: 'app://x',
  })
  const toAndroid = standins.fcm.received.find((r) => r.body.message.token === `ok-${suffix}`)!
  expect(toAndroid.body.message).toEqual({
    token: `ok-${suffix}`,
    notification: { title: 'Hi', body: 'There' },
    data: { ll_actions: '[{"title":"Open","deeplink":"app://o"}]' },
    android: { priority: 'HIGH' },
  })
  const dead = await store.query<{
    push_token: string
    install_uuid: string
    transport: string
    reason: string
  }>(
    `SELECT push_token, install_uuid, transport, reason FROM invalid_push_tokens FINAL WHERE app_id = {app:String} ORDER BY push_token`,
    { app },
  )
  expect(dead.map((d) => [d.push_token, d.install_uuid, d.transport])).toEqual([
    ['dead0001', 'i-dead-ios', 'apns'],
    [`gone-${suffix}`, 'i-gone-and', 'fcm'],
  ])

  // The dead tokens are never targeted again.
  await push('second')
  const second = await delivered('second', 2)
  expect(second.map((r) => [r.install_uuid, r.status])).toEqual([
    ['i-ok-and', 'sent'],
    ['i-ok-ios', 'sent'],
  ])
}
