import { join } from 'node:path'
import { expect } from 'vitest'
import type { Store } from '../../pipelines/connectors/store/store.ts'
import { encodePushRequest } from '../../schemas/push.ts'
import { postSdk, sdkReceiptDone, sessionRow, uuid } from '../helpers/ingestion-scenario.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { pushFileLines } from '../helpers/push-file-lines.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { documentedFetch } from '../helpers/openapi-check.ts'

/**
 * The push endpoint contract, run the same way in both modes: every target type the build serves,
 * valid and invalid bodies, repeated request ids, rate-limit bursts, the campaign-key cap, the
 * file transport's output, push_deliveries and the campaign report. Needs
 * SLUICE_PUSH_NEW_CAMPAIGN_KEYS_PER_DAY=3 (the cap, reached with few requests).
 */

export const PUSH_SCENARIO_ENV = { SLUICE_PUSH_NEW_CAMPAIGN_KEYS_PER_DAY: '3' }

interface Answer {
  status: number
  body: Record<string, unknown>
  headers: Headers
}

interface DeliveryRow {
  request_id: string
  install_uuid: string
  customer_id: string
  platform: string
  transport: string
  status: string
  error: string
  attempts: number
  message_index: number
  campaign_key: string
}

interface FileLine {
  delivery_id: string
  request_id: string
  campaign_key: string | null
  app_id: string
  install_uuid: string
  customer_id: string
  platform: string
  push_token: string
  attempt: number
  message: Record<string, unknown>
  payload: Record<string, unknown>
}

function device(
  install: string,
  o: { customer?: string; platform: string; token: string; status?: string; at: number },
) {
  return {
    ...sessionRow({
      install,
      ...(o.customer ? { customer: o.customer } : {}),
      at: o.at,
      country: 'fr',
      model: 'm',
    }),
    platform: o.platform,
    push_token: o.token,
    push_status: o.status ?? 'Enabled (Prominent)',
  }
}

export async function runPushScenario(sluice: InProcessSluice, store: Store, suffix: string) {
  const app = `pa-${suffix}`
  const tenant = await sluice.tenant(`push-${suffix}`, [app])
  const other = await sluice.tenant(`push-other-${suffix}`, [`po-${suffix}`])
  const post = async (
    body: unknown,
    o: { appId?: string; auth?: string; raw?: string } = {},
  ): Promise<Answer> => {
    const res = await documentedFetch(`${sluice.url}/v2/push/${o.appId ?? app}`, {
      method: 'POST',
      headers: { Authorization: o.auth ?? tenant.auth, 'Content-Type': 'application/json' },
      body: o.raw ?? JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json()) as Record<string, unknown>, headers: res.headers }
  }
  const deliveries = (requestId: string) =>
    store.query<DeliveryRow>(
      `SELECT request_id, install_uuid, customer_id, platform, transport, status, error, attempts, message_index, campaign_key
       FROM push_deliveries WHERE app_id = {app:String} AND request_id = {id:String} ORDER BY install_uuid`,
      { app, id: requestId },
    )
  const deliveredTo = (requestId: string, count: number) =>
    waitFor(
      () => deliveries(requestId),
      (rows) => rows.length >= count,
      { what: `${count} deliveries of ${requestId}`, timeoutMs: 60_000 },
    )
  const fileLines = () => pushFileLines<FileLine>(join(sluice.running.runtime.dataDir, 'push', app))
  const linesOf = async (requestId: string) => (await fileLines()).filter((l) => l.request_id === requestId)

  // Devices, as the SDK reports them.
  const t0 = Date.now() - 60_000
  const tx = await postSdk(sluice, app, [
    device('i-a1', { customer: 'ann', platform: 'iOS', token: 'tok-a1', at: t0 }),
    device('i-a2', { customer: 'ann', platform: 'Android', token: 'tok-a2', at: t0 + 1000 }),
    device('i-b1', { customer: 'bob', platform: 'ios', token: 'tok-b1', at: t0 }),
    device('i-c1', { customer: 'cat', platform: 'iOS', token: 'tok-c1', status: 'Disabled', at: t0 }),
    device('i-d1', { platform: 'ANDROID', token: 'tok-d1', at: t0 }),
    device('i-e1', { customer: 'eve', platform: 'Windows', token: 'tok-e1', at: t0 }),
    device('i-f1', { customer: 'fay', platform: 'iOS', token: '', at: t0 }),
  ])
  await sdkReceiptDone(sluice, app, tx)

  // A broadcast: every install with an enabled push token; the Windows one is recorded failed.
  const bc1 = await post({
    request_id: 'bc-1',
    campaign_key: 'spring',
    target_type: 'broadcast',
    messages: [
      {
        alert: { title: 'Sale', subtitle: 'Today', body: 'Half price' },
        ios: { sound: 'default', badge: 1, alert: {} },
        android: { priority: 'high', extra: { ll_actions: [{ title: 'Open', deeplink: 'app://sale' }] } },
      },
    ],
  })
  expect(bc1).toMatchObject({ status: 202, body: { message: 'Queued for delivery', request_id: 'bc-1' } })
  const bcRows = await deliveredTo('bc-1', 5)
  expect(
    bcRows.map((r) => [r.install_uuid, r.customer_id, r.platform, r.transport, r.status, r.error]),
  ).toEqual([
    ['i-a1', 'ann', 'ios', 'file', 'sent', ''],
    ['i-a2', 'ann', 'android', 'file', 'sent', ''],
    ['i-b1', 'bob', 'ios', 'file', 'sent', ''],
    ['i-d1', '', 'android', 'file', 'sent', ''],
    ['i-e1', 'eve', 'Windows', '', 'failed', 'unsupported platform "Windows"'],
  ])
  expect(bcRows.every((r) => r.campaign_key === 'spring')).toBe(true)
  expect(bcRows.filter((r) => r.status === 'sent').every((r) => Number(r.attempts) === 1)).toBe(true)
  const bcLines = await linesOf('bc-1')
  expect(bcLines.map((l) => [l.delivery_id, l.platform, l.push_token]).sort()).toEqual([
    ['bc-1:i-a1', 'ios', 'tok-a1'],
    ['bc-1:i-a2', 'android', 'tok-a2'],
    ['bc-1:i-b1', 'ios', 'tok-b1'],
    ['bc-1:i-d1', 'android', 'tok-d1'],
  ])
  expect(bcLines[0]!.message).toEqual({
    alert: { title: 'Sale', subtitle: 'Today', body: 'Half price' },
    ios: { sound: 'default', badge: 1, content_available: true, mutable_content: false },
    android: { priority: 'high', extra: { ll_actions: [{ title: 'Open', deeplink: 'app://sale' }] } },
  })
  expect(bcLines.every((l) => l.campaign_key === 'spring' && l.app_id === app && l.attempt === 1)).toBe(true)

  // The same request id again: 202, nothing sent twice. This edge remembers it; a copy taken by
  // another edge (put on the bus as an edge would) is dropped by the planner.
  expect(
    await post({ request_id: 'bc-1', target_type: 'broadcast', messages: [{ alert: 'again' }] }),
  ).toMatchObject({
    status: 202,
    body: { message: 'Queued for delivery', request_id: 'bc-1' },
  })
  const { bus, topology } = sluice.running.runtime
  await bus.produce(topology.topics.pushRequests.topic, [
    encodePushRequest({
      v: 1,
      requestId: 'bc-1',
      appId: app,
      orgId: tenant.orgId,
      receivedAt: Date.now(),
      campaignKey: null,
      targetType: 'broadcast',
      allDevices: false,
      messages: [{ alert: 'from another edge' }],
      origin: 'api',
    }),
  ])

  // customer_id: the customer's most recent device; all_devices: every one; unknown customers unmatched.
  const cu1 = await post({
    request_id: 'cu-1',
    target_type: 'customer_id',
    messages: [
      { target: 'ann', alert: 'for ann' },
      { target: 'bob', alert: 'for bob' },
      { target: 'zed', alert: 'nobody' },
      { target: 'cat', alert: 'push disabled' },
    ],
  })
  expect(cu1.status).toBe(202)
  expect(
    (await deliveredTo('cu-1', 2)).map((r) => [r.install_uuid, r.status, Number(r.message_index)]),
  ).toEqual([
    ['i-a2', 'sent', 0],
    ['i-b1', 'sent', 1],
  ])
  expect((await linesOf('cu-1')).map((l) => [l.install_uuid, l.message.alert]).sort()).toEqual([
    ['i-a2', 'for ann'],
    ['i-b1', 'for bob'],
  ])
  const cu2 = await post({
    target_type: 'customer_id',
    all_devices: true,
    request_id: null,
    campaign_key: null,
    messages: [{ target: 'ann' }],
  })
  expect(cu2.status).toBe(202)
  const generated = cu2.body.request_id as string
  expect(generated).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/)
  expect((await deliveredTo(generated, 2)).map((r) => [r.install_uuid, r.status])).toEqual([
    ['i-a1', 'sent'],
    ['i-a2', 'sent'],
  ])
  // No top-level alert: a silent push, as "" is.
  expect((await linesOf(generated)).map((l) => l.message)).toEqual([{ alert: '' }, { alert: '' }])

  // audience_id: the audience's members now (through the audience compiler), those with push.
  const api = async (method: string, path: string, body?: unknown, auth = tenant.auth) => {
    const res = await documentedFetch(`${sluice.url}${path}`, {
      method,
      headers: { Authorization: auth, 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    })
    return { status: res.status, body: (await res.json().catch(() => undefined)) as Record<string, unknown> }
  }
  expect((await api('PATCH', `/v1/apps/${app}/profiles/ann`, { attributes: { tier: 'gold' } })).status).toBe(
    202,
  )
  expect((await api('PATCH', `/v1/apps/${app}/profiles/cat`, { attributes: { tier: 'gold' } })).status).toBe(
    202,
  )
  expect((await api('PATCH', '/v1/profiles/bob', { attributes: { age: 41 } })).status).toBe(202)
  expect((await api('PATCH', '/v1/profiles/eve', { attributes: { age: 19 } })).status).toBe(202)
  for (const path of [
    `/v1/apps/${app}/profiles/ann`,
    `/v1/apps/${app}/profiles/cat`,
    '/v1/profiles/bob',
    '/v1/profiles/eve',
  ])
    await waitFor(
      () => api('GET', path),
      (r) => r.status === 200,
      { what: `profile ${path}` },
    )
  const gold = await api('POST', `/api/v6/orgs/${tenant.orgId}/apps/${app}/audiences`, {
    name: 'Gold',
    target_rules: {
      behavior_profile_operator: 'and',
      targeting_type: 'install_id',
      profile: {
        criteria: [
          { key: 'tier', scope: 'app', date_type: 'string', operator: 'is one of', values: ['gold'] },
        ],
        operator: 'and',
      },
    },
  })
  expect(gold.status).toBe(201)
  const goldId = gold.body.id as number
  const au1 = await post({
    request_id: 'au-1',
    target_type: 'audience_id',
    messages: [{ target: goldId, alert: 'gold' }],
  })
  expect(au1).toMatchObject({ status: 202, body: { request_id: 'au-1' } })
  // ann's two devices; cat is gold too but her push is disabled.
  expect((await deliveredTo('au-1', 2)).map((r) => [r.install_uuid, r.customer_id, r.status])).toEqual([
    ['i-a1', 'ann', 'sent'],
    ['i-a2', 'ann', 'sent'],
  ])
  expect((await linesOf('au-1')).map((l) => l.message.alert)).toEqual(['gold', 'gold'])
  expect(await post({ target_type: 'audience_id', messages: [{ target: goldId + 1000 }] })).toMatchObject({
    status: 403,
    body: { error: `audience ${goldId + 1000} is unknown, deleted or not an audience of app ${app}` },
  })
  expect(
    await post(
      { target_type: 'audience_id', messages: [{ target: goldId }] },
      { appId: `po-${suffix}`, auth: other.auth },
    ),
  ).toMatchObject({
    status: 403,
    body: { error: `audience ${goldId} is unknown, deleted or not an audience of app po-${suffix}` },
  })

  // profile: customers whose profile matches, at app or org scope.
  const pr1 = await post({
    request_id: 'pr-1',
    target_type: 'profile',
    messages: [
      {
        alert: 'adults',
        target: {
          profile: {
            criteria: [{ key: 'age', scope: 'Organization', type: 'int', op: '>=', values: 21 }],
            op: 'and',
          },
        },
      },
    ],
  })
  expect(pr1).toMatchObject({ status: 202, body: { request_id: 'pr-1' } })
  expect((await deliveredTo('pr-1', 1)).map((r) => [r.install_uuid, r.customer_id, r.status])).toEqual([
    ['i-b1', 'bob', 'sent'],
  ])
  const pr2 = await post({
    request_id: 'pr-2',
    target_type: 'profile',
    messages: [
      {
        target: {
          profile: {
            criteria: [
              { key: 'tier', scope: 'ServiceApplication', type: 'string', op: 'in', values: ['gold'] },
              { key: 'age', scope: 'Organization', type: 'int', op: 'between', values: [18, 20] },
            ],
            op: 'or',
          },
        },
      },
    ],
  })
  expect(pr2.status).toBe(202)
  // gold (ann's two devices) or aged 18-20 (eve, whose Windows device has no push transport platform).
  expect((await deliveredTo('pr-2', 3)).map((r) => [r.install_uuid, r.status])).toEqual([
    ['i-a1', 'sent'],
    ['i-a2', 'sent'],
    ['i-e1', 'failed'],
  ])

  // The repeat of bc-1 was planned before cu-1 (one planner owns the app's requests, in order):
  // by now it has been dropped, and bc-1 is still delivered once per install.
  expect((await deliveries('bc-1')).length).toBe(5)
  expect((await linesOf('bc-1')).length).toBe(4)
  const requests = await store.query<{
    request_id: string
    status: string
    targeted: string
    unmatched: string
  }>(
    `SELECT request_id, status, targeted, unmatched FROM push_requests FINAL
     WHERE app_id = {app:String} ORDER BY request_id`,
    { app },
  )
  expect(
    requests
      .filter((r) => r.request_id !== generated)
      .map((r) => [r.request_id, r.status, Number(r.targeted), Number(r.unmatched)]),
  ).toEqual([
    ['au-1', 'planned', 2, 0],
    ['bc-1', 'planned', 5, 0],
    ['cu-1', 'planned', 2, 2],
    ['pr-1', 'planned', 1, 0],
    ['pr-2', 'planned', 3, 0],
  ])

  // Bodies as real clients of the original service send them: a Java client (all_devices true with
  // a profile target, app scope spelled LocalyticsApplication, nulls for unset options) and a
  // Python one (campaign_key "null", and it reads the Content-Type of every answer).
  const java = await post({
    request_id: '5f0c2b3e-9d1a-4c7e-8b2f-1a2b3c4d5e6f',
    campaign_key: null,
    target_type: 'profile',
    all_devices: true,
    messages: [
      {
        alert: 'from java',
        ios: { sound: 'default.wav', badge: 1, extra: null },
        android: { priority: 'high', extra: null },
        target: {
          profile: {
            op: 'and',
            criteria: [
              { key: 'tier', scope: 'LocalyticsApplication', type: 'string', op: 'in', values: ['gold'] },
            ],
          },
        },
      },
    ],
  })
  expect(java).toMatchObject({ status: 202, body: { request_id: '5f0c2b3e-9d1a-4c7e-8b2f-1a2b3c4d5e6f' } })
  expect(java.headers.get('Content-Type')).toBe('application/json; charset=utf-8')
  expect(
    (await deliveredTo('5f0c2b3e-9d1a-4c7e-8b2f-1a2b3c4d5e6f', 2)).map((r) => [r.install_uuid, r.status]),
  ).toEqual([
    ['i-a1', 'sent'],
    ['i-a2', 'sent'],
  ])
  const python = await post({
    target_type: 'customer_id',
    campaign_key: 'null',
    messages: [{ target: 'bob', alert: 'py' }],
  })
  expect(python.status).toBe(202)
  expect(python.headers.get('Content-Type')).toBe('application/json; charset=utf-8')
  expect(
    (await deliveredTo(python.body.request_id as string, 1)).map((r) => [r.install_uuid, r.campaign_key]),
  ).toEqual([['i-b1', '']])

  // 400s name the problem; every error body has error and errors.
  const bad = await post({ target_type: 'broadcast', campaign_key: 'has space', messages: [{ alert: 5 }] })
  expect(bad).toMatchObject({
    status: 400,
    body: {
      error:
        'campaign_key: campaign_key must not contain spaces; messages[0].alert: alert must be a string or an object with title and body',
      errors: [
        'campaign_key: campaign_key must not contain spaces',
        'messages[0].alert: alert must be a string or an object with title and body',
      ],
    },
  })
  expect(bad.headers.get('Content-Type')).toBe('application/json; charset=utf-8')
  expect(await post(undefined, { raw: '{"target_type":' })).toMatchObject({
    status: 400,
    body: { error: 'request body is not valid JSON' },
  })
  expect(await post({ target_type: 'broadcast', messages: [{ alert: 'a' }, { alert: 'b' }] })).toMatchObject({
    status: 400,
    body: {
      errors: ['messages: several messages are only allowed with target_type customer_id, not broadcast'],
    },
  })

  // 401 and 403s.
  const wrongSecret = `Basic ${Buffer.from(`${tenant.apiKey}:nope`).toString('base64')}`
  const unauthorised = await post({ target_type: 'broadcast', messages: [{}] }, { auth: wrongSecret })
  expect(unauthorised).toMatchObject({ status: 401, body: { error: 'invalid credentials' } })
  expect(unauthorised.headers.get('Content-Type')).toBe('application/json; charset=utf-8')
  expect(await post({ target_type: 'broadcast', messages: [{}] }, { appId: `po-${suffix}` })).toMatchObject({
    status: 403,
    body: { error: `app po-${suffix} does not belong to this organization` },
  })
  expect(await post({ target_type: 'broadcast', messages: [{}] }, { appId: 'no-such-app' })).toMatchObject({
    status: 403,
    body: { error: 'app no-such-app does not belong to this organization' },
  })
  expect(
    await post({ target_type: 'broadcast', messages: [{}] }, { appId: app, auth: other.auth }),
  ).toMatchObject({ status: 403, body: { error: `app ${app} does not belong to this organization` } })

  // A platform without a transport: an app that set one for iOS only. A message meant for Android
  // only is refused, naming it; one with options for both goes ahead (real clients send both).
  const iosOnly = `pi-${suffix}`
  await sluice.admin('POST', `/orgs/${tenant.orgId}/apps`, { name: iosOnly, app_id: iosOnly })
  await sluice.admin('PUT', `/apps/${iosOnly}/push/transports/ios`, { kind: 'file', settings: {} })
  const androidOnly = await waitFor(
    () =>
      post(
        { target_type: 'broadcast', messages: [{ alert: 'a', android: { priority: 'high' } }] },
        { appId: iosOnly },
      ),
    (r) => r.status === 403,
    { what: 'the iOS-only transport in force' },
  )
  expect(androidOnly.body.error).toBe(
    `app ${iosOnly} has no push transport configured for android, the only platform messages[0] sets options for; configure one (sluice admin push-transport set)`,
  )
  expect(
    (
      await post(
        {
          target_type: 'broadcast',
          messages: [{ alert: 'b', ios: { badge: 1 }, android: { priority: 'high' } }],
        },
        { appId: iosOnly },
      )
    ).status,
  ).toBe(202)

  // Broadcast: 2 per minute per app. bc-1 took one; bc-2 the other; bc-3 is refused, and a retry
  // of bc-2 is not (a repeat is no new request).
  expect(
    (await post({ request_id: 'bc-2', target_type: 'broadcast', messages: [{ alert: '' }] })).status,
  ).toBe(202)
  const limited = await post({ request_id: 'bc-3', target_type: 'broadcast', messages: [{ alert: 'x' }] })
  expect(limited).toMatchObject({
    status: 429,
    body: { error: `rate limit of 2 broadcast requests per minute for app ${app} exceeded; retry later` },
  })
  expect(Number(limited.headers.get('Retry-After'))).toBeGreaterThanOrEqual(1)
  expect(
    await post({ request_id: 'bc-2', target_type: 'broadcast', messages: [{ alert: '' }] }),
  ).toMatchObject({
    status: 202,
    body: { request_id: 'bc-2' },
  })
  // Limits are per target type: customer_id requests still pass.
  expect((await post({ target_type: 'customer_id', messages: [{ target: 'bob' }] })).status).toBe(202)

  // New campaign keys: 3 per 24 h here (100 by default). 'spring' is one; k2, k3 make three.
  const withKey = (key: string) =>
    post({ target_type: 'customer_id', campaign_key: key, messages: [{ target: 'bob' }] })
  expect((await withKey('k2')).status).toBe(202)
  expect((await withKey('k3')).status).toBe(202)
  const capped = await withKey('k4')
  expect(capped.status).toBe(429)
  expect(capped.body.error).toBe(
    `campaign_key "k4" would be a new campaign key, and app ${app} used 3 new campaign keys in the last 24 hours (the limit); reuse a key, omit it, or retry later`,
  )
  expect(Number(capped.headers.get('Retry-After'))).toBeGreaterThan(80_000)
  const reuse = await post({
    request_id: 'cu-3',
    target_type: 'customer_id',
    campaign_key: 'spring',
    messages: [{ target: 'bob' }],
  })
  expect(reuse.status).toBe(202)
  await deliveredTo('cu-3', 1)

  // Opens: SDK events named 'Push Opened' carrying the request id or the campaign key.
  const opens = await postSdk(sluice, app, [
    {
      type: 'e',
      uuid: uuid(),
      install_uuid: 'i-a1',
      at_millis: Date.now() - 1000,
      name: 'Push Opened',
      attributes: { request_id: 'bc-1' },
    },
    {
      type: 'e',
      uuid: uuid(),
      install_uuid: 'i-b1',
      at_millis: Date.now() - 900,
      name: 'Push Opened',
      attributes: { campaign_key: 'spring' },
    },
    {
      type: 'e',
      uuid: uuid(),
      install_uuid: 'i-b1',
      at_millis: Date.now() - 800,
      name: 'Push Opened',
      attributes: { request_id: 'cu-3' },
    },
    {
      type: 'e',
      uuid: uuid(),
      install_uuid: 'i-d1',
      at_millis: Date.now() - 700,
      name: 'Push Opened',
      attributes: { request_id: 'cu-1' },
    },
  ])
  await sdkReceiptDone(sluice, app, opens)
  const report = async () => {
    const res = await documentedFetch(`${sluice.url}/v2/push/${app}/reports/spring`, {
      headers: { Authorization: tenant.auth },
    })
    return { status: res.status, body: (await res.json()) as Record<string, unknown> }
  }
  const expected = {
    app_id: app,
    campaign_key: 'spring',
    requests: 2,
    targeted: 6,
    sent: 5,
    failed: 1,
    pending: 0,
    opened: 2,
  }
  const got = await waitFor(report, (r) => r.status === 200 && r.body.opened === 2, {
    what: 'the spring report',
  })
  expect(got.body).toMatchObject(expected)
  expect(typeof got.body.first_request_at).toBe('string')
  const [view] = await store.query<Record<string, string>>(
    `SELECT requests, targeted, sent, failed, opened FROM push_campaign_reports
     WHERE app_id = {app:String} AND campaign_key = 'spring'`,
    { app },
  )
  expect(Object.fromEntries(Object.entries(view ?? {}).map(([k, v]) => [k, Number(v)]))).toEqual({
    requests: 2,
    targeted: 6,
    sent: 5,
    failed: 1,
    opened: 2,
  })
  expect(
    await documentedFetch(`${sluice.url}/v2/push/${app}/reports/never-used`, {
      headers: { Authorization: tenant.auth },
    }).then((r) => r.status),
  ).toBe(404)
  expect(
    await documentedFetch(`${sluice.url}/v2/push/${app}/reports/spring`, {
      headers: { Authorization: other.auth },
    }).then((r) => r.status),
  ).toBe(403)

  // Exactly once over everything this scenario sent.
  const twice = await store.query<{ request_id: string; install_uuid: string; n: string }>(
    `SELECT request_id, install_uuid, count() AS n FROM push_deliveries WHERE app_id = {app:String}
     GROUP BY request_id, install_uuid HAVING n > 1`,
    { app },
  )
  expect(twice).toEqual([])
}
