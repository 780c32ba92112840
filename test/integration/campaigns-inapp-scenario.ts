import { expect } from 'vitest'
import { postSdk, sdkReceiptDone, sessionRow, uuid } from '../helpers/ingestion-scenario.ts'
import type { InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { waitFor } from '../helpers/wait-for.ts'
import { makeZip } from '../helpers/zip.ts'
import type { Answer } from './campaigns-scenario.ts'

/**
 * In-app campaigns end to end, the same in both modes: multipart create and update with real
 * HTML and zip files (and hostile ones), the files served back, and the SDK endpoint answering
 * what an install qualifies for (audience, device type, dates, control group, frequency caps fed
 * by the SDK's own impression events).
 */

const page = (title: string) =>
  `<!doctype html><html><head><title>${title}</title></head><body>${title}</body></html>`

interface Part {
  name: string
  value: string | { data: Buffer; filename: string; type?: string }
}

async function multipart(
  sluice: InProcessSluice,
  auth: string,
  method: 'POST' | 'PUT',
  path: string,
  parts: Part[],
): Promise<{ status: number; body: Answer }> {
  const form = new FormData()
  for (const p of parts) {
    if (typeof p.value === 'string') form.append(p.name, p.value)
    else
      form.append(
        p.name,
        new Blob([new Uint8Array(p.value.data)], { type: p.value.type ?? 'application/octet-stream' }),
        p.value.filename,
      )
  }
  const res = await fetch(`${sluice.url}${path}`, { method, headers: { Authorization: auth }, body: form })
  const text = await res.text()
  return { status: res.status, body: (text === '' ? undefined : JSON.parse(text)) as Answer }
}

function inappData(over: Record<string, unknown> = {}) {
  return {
    name: 'Welcome banner',
    status: 'active',
    goal: 'activate',
    audiences: { campaign_type: 'everyone', control_group_percent: 0, devices: ['phone'] },
    schedule: {
      trigger_name: 'session event',
      trigger_type: 'any session',
      event_name: 'App Launch',
      begin_date: '2020-01-01T00:00:00Z',
      end_date: '2099-01-01T00:00:00Z',
      frequency_attributes: [{ name: 'messages_per_days', days: 1, count: 1 }],
    },
    creatives: [
      { title: 'Banner', percent: 100, position: 'center', key_values: [{ key: 'k', value: 'v' }] },
    ],
    ...over,
  }
}

interface SdkOffer {
  id: number
  name: string
  creative: {
    id: number
    letter: string
    file_name: string
    file_kind: string
    url: string
    position: string
  }
  trigger: Record<string, unknown>
}

export async function runInappScenario(sluice: InProcessSluice, suffix: string) {
  const appId = `inapp-${suffix}`
  const tenant = await sluice.tenant(`inapp-${suffix}`, [appId])
  const base = `/api/v6/orgs/${tenant.orgId}/apps/${appId}/inapp/campaigns`
  const zip = makeZip([
    { name: 'index.html', data: page('Zip creative') },
    { name: 'style.css', data: 'body { color: teal }' },
  ])

  // Create with a zip for the phone and an HTML page for the tablet.
  const created = await multipart(sluice, tenant.auth, 'POST', base, [
    { name: 'data', value: JSON.stringify(inappData({ audiences: { devices: ['phone', 'tablet'] } })) },
    { name: 'file_phone_1', value: { data: zip, filename: 'banner.zip', type: 'application/zip' } },
    {
      name: 'file_tablet_1',
      value: { data: Buffer.from(page('Tablet')), filename: '../../tablet page.html' },
    },
  ])
  expect(created.status).toBe(201)
  const id = created.body.id
  const creativeId = created.body.creatives[0]!.id
  expect(created.body).toEqual({
    id,
    name: 'Welcome banner',
    status: 'active',
    goal: 'activate',
    audiences: { campaign_type: 'everyone', control_group_percent: 0, devices: ['phone', 'tablet'] },
    schedule: {
      trigger_name: 'session event',
      trigger_type: 'any session',
      event_name: 'App Launch',
      begin_date: '2020-01-01T00:00:00Z',
      end_date: '2099-01-01T00:00:00Z',
      frequency_attributes: [{ name: 'messages_per_days', days: 1, count: 1 }],
    },
    creatives: [
      {
        id: creativeId,
        letter: 'A',
        title: 'Banner',
        percent: 100,
        position: 'center',
        key_values: [{ key: 'k', value: 'v' }],
        file_phone: 'banner.zip',
        file_tablet: 'tablet_page.html',
      },
    ],
  })
  const api = (path: string) => fetch(`${sluice.url}${path}`, { headers: { Authorization: tenant.auth } })
  expect(await (await api(`${base}/${id}`)).json()).toEqual(created.body)

  // The files come back byte for byte, by name.
  const zipBack = await api(`${base}/${id}/files/banner.zip`)
  expect(zipBack.status).toBe(200)
  expect(zipBack.headers.get('content-type')).toBe('application/zip')
  expect(Buffer.from(await zipBack.arrayBuffer()).equals(zip)).toBe(true)
  const htmlBack = await api(`${base}/${id}/files/tablet_page.html`)
  expect(htmlBack.headers.get('content-security-policy')).toBe('sandbox allow-scripts allow-popups')
  expect(await htmlBack.text()).toBe(page('Tablet'))
  expect((await api(`${base}/${id}/files/..%2F..%2Fadmin-token`)).status).toBe(404)

  // Hostile and wrong uploads: checked by content, 422 naming the part; no campaign is made.
  const traversal = makeZip([
    { name: 'index.html', data: page('x') },
    { name: '../../escape.html', data: 'x' },
  ])
  const bad = await multipart(sluice, tenant.auth, 'POST', base, [
    { name: 'data', value: JSON.stringify(inappData()) },
    { name: 'file_phone_1', value: { data: traversal, filename: 'a.zip' } },
    { name: 'file_tablet_1', value: { data: Buffer.from('%PDF-1.4 not html'), filename: 'b.html' } },
  ])
  expect(bad.status).toBe(422)
  expect(bad.body.errors).toEqual([
    expect.stringMatching(
      /^file_phone_1: (holds an entry outside the archive|is not a readable zip archive)/,
    ),
    'file_tablet_1: is neither an HTML document nor a zip archive',
  ])
  const bomb = makeZip([
    { name: 'index.html', data: page('x') },
    { name: 'zeros.bin', data: Buffer.alloc(60 * 1024 * 1024), declaredSize: 100 },
  ])
  const bombed = await multipart(sluice, tenant.auth, 'POST', base, [
    { name: 'data', value: JSON.stringify(inappData()) },
    { name: 'file_phone_1', value: { data: bomb, filename: 'bomb.zip' } },
  ])
  expect(bombed.status).toBe(422)
  expect(bombed.body.error).toMatch(/^file_phone_1: /)
  const noFile = await multipart(sluice, tenant.auth, 'POST', base, [
    { name: 'data', value: JSON.stringify(inappData()) },
  ])
  expect(noFile).toMatchObject({
    status: 422,
    body: { error: expect.stringMatching(/^file_phone_1: creative 1 needs/) },
  })
  const badData = await multipart(sluice, tenant.auth, 'POST', base, [
    { name: 'data', value: JSON.stringify(inappData({ schedule: { begin_date: 'soon' } })) },
    { name: 'file_phone_1', value: { data: zip, filename: 'banner.zip' } },
  ])
  expect(badData).toMatchObject({
    status: 422,
    body: { error: expect.stringMatching(/^schedule\.begin_date: /) },
  })
  expect(
    (await multipart(sluice, tenant.auth, 'POST', base, [{ name: 'data', value: '{not json' }])).status,
  ).toBe(400)
  const json = await fetch(`${sluice.url}${base}`, {
    method: 'POST',
    headers: { Authorization: tenant.auth, 'Content-Type': 'application/json' },
    body: JSON.stringify(inappData()),
  })
  expect(json.status).toBe(415)
  expect(
    (await (
      await api(`/api/v6/orgs/${tenant.orgId}/apps/${appId}/campaigns?channel=in-app`)
    ).json()) as Answer,
  ).toMatchObject({
    total_records: 1,
    campaigns: [{ id, status: 'active' }],
  })

  // The SDK: a known install on a phone gets the campaign with its zip's URL.
  const installs = ['inapp-a', 'inapp-b'].map((i) => `${i}-${suffix}`)
  const tx = await postSdk(
    sluice,
    appId,
    installs.map((install) =>
      sessionRow({ install, at: Date.now() - 60_000, country: 'fr', model: 'iPhone15,2' }),
    ),
  )
  await sdkReceiptDone(sluice, appId, tx)
  const sdk = async (install: string, device = 'phone') => {
    const res = await fetch(
      `${sluice.url}/v1/sdk/apps/${appId}/inapp?install_uuid=${install}&device_type=${device}`,
    )
    return { status: res.status, body: (await res.json()) as { campaigns: SdkOffer[] } }
  }
  const offered = await sdk(installs[0]!)
  expect(offered.status).toBe(200)
  expect(offered.body.campaigns).toEqual([
    {
      id,
      name: 'Welcome banner',
      goal: 'activate',
      creative: {
        id: creativeId,
        letter: 'A',
        title: 'Banner',
        position: 'center',
        key_values: [{ key: 'k', value: 'v' }],
        file_name: 'banner.zip',
        file_kind: 'zip',
        url: expect.stringMatching(
          new RegExp(`/v1/sdk/apps/${appId}/inapp/assets/[0-9a-f]{64}/banner\\.zip$`),
        ),
      },
      trigger: { trigger_name: 'session event', trigger_type: 'any session', event_name: 'App Launch' },
      begin_date: '2020-01-01T00:00:00Z',
      end_date: '2099-01-01T00:00:00Z',
      frequency_attributes: [{ name: 'messages_per_days', days: 1, count: 1 }],
    },
  ])
  const asset = await fetch(offered.body.campaigns[0]!.creative.url)
  expect(Buffer.from(await asset.arrayBuffer()).equals(zip)).toBe(true)
  const tablet = await sdk(installs[0]!, 'tablet')
  expect(tablet.body.campaigns[0]!.creative.file_name).toBe('tablet_page.html')
  expect((await fetch(`${sluice.url}/v1/sdk/apps/nope-${suffix}/inapp?install_uuid=x`)).status).toBe(401)
  expect((await fetch(`${sluice.url}/v1/sdk/apps/${appId}/inapp`)).status).toBe(400)
  expect(
    (await fetch(`${sluice.url}/v1/sdk/apps/${appId}/inapp/assets/${'0'.repeat(64)}/x.html`)).status,
  ).toBe(404)

  // An impression counts against the cap of 1 a day: the install is not offered it again.
  const impression = await postSdk(sluice, appId, [
    {
      type: 'e',
      uuid: uuid(),
      install_uuid: installs[0],
      session_uuid: 'sess-imp',
      at_millis: Date.now() - 1000,
      name: 'In-App Displayed',
      attributes: { campaign_id: String(id), creative_id: String(creativeId) },
    },
  ])
  await sdkReceiptDone(sluice, appId, impression)
  await waitFor(
    () => sdk(installs[0]!),
    (r) => r.body.campaigns.length === 0,
    { what: 'the capped campaign to leave the offers', timeoutMs: 30_000 },
  )
  expect((await sdk(installs[1]!)).body.campaigns.map((c) => c.id)).toEqual([id])

  // Results per creative from the SDK's own events: one install shown it, then a click.
  const click = await postSdk(sluice, appId, [
    {
      type: 'e',
      uuid: uuid(),
      install_uuid: installs[0],
      session_uuid: 'sess-imp',
      at_millis: Date.now() - 500,
      name: 'In-App Clicked',
      attributes: { campaign_id: String(id), creative_id: String(creativeId) },
    },
  ])
  await sdkReceiptDone(sluice, appId, click)
  const results = await waitFor(
    async () => (await (await api(`${base}/${id}/performance`)).json()) as { variants: unknown[] },
    (r) => JSON.stringify(r.variants).includes('"sent":1'),
    { what: 'the in-app click counted', timeoutMs: 30_000 },
  )
  expect(results).toEqual({
    campaign_id: id,
    conversion_event: null,
    conversion_window_days: 7,
    variants: [
      {
        variant: 'A',
        creative_id: creativeId,
        assigned: 1,
        targeted: 1,
        sent: 1,
        conversions: 0,
        conversion_rate: 0,
        lift: null,
      },
    ],
  })

  // Inline target rules: only installs that purchased in the last 30 days are offered this one.
  const buyers = await multipart(sluice, tenant.auth, 'POST', base, [
    {
      name: 'data',
      value: JSON.stringify(
        inappData({
          name: 'Buyers only',
          audiences: {
            target_rules: {
              behavior: {
                days: 30,
                rules: [{ rule_type: 'event', event_name: 'Purchase', count_operator: 'at_least', count: 1 }],
              },
            },
          },
        }),
      ),
    },
    { name: 'file_phone_1', value: { data: Buffer.from(page('Buyers')), filename: 'buyers.html' } },
  ])
  expect(buyers.status).toBe(201)
  const purchase = await postSdk(sluice, appId, [
    {
      type: 'e',
      uuid: uuid(),
      install_uuid: installs[1],
      session_uuid: 'sess-p',
      at_millis: Date.now() - 5000,
      name: 'Purchase',
    },
  ])
  await sdkReceiptDone(sluice, appId, purchase)
  const offeredB = await waitFor(
    () => sdk(installs[1]!),
    (r) => r.body.campaigns.some((c) => c.id === buyers.body.id),
    { what: 'the buyers-only campaign offered to the buyer', timeoutMs: 30_000 },
  )
  expect(offeredB.body.campaigns.map((c) => c.name).sort()).toEqual(['Buyers only', 'Welcome banner'])
  expect((await sdk(installs[0]!)).body.campaigns).toEqual([])
  expect(
    (
      await fetch(`${sluice.url}${base}/${buyers.body.id}`, {
        method: 'DELETE',
        headers: { Authorization: tenant.auth },
      })
    ).status,
  ).toBe(204)

  // Update: devices phone only, a 100 % control group: no one is offered it; the files stay.
  const updated = await multipart(sluice, tenant.auth, 'PUT', `${base}/${id}`, [
    {
      name: 'data',
      value: JSON.stringify(inappData({ audiences: { control_group_percent: 100, devices: ['phone'] } })),
    },
  ])
  expect(updated.status).toBe(200)
  expect(updated.body.creatives[0]).toMatchObject({
    id: creativeId,
    file_phone: 'banner.zip',
    file_tablet: 'tablet_page.html',
  })
  await waitFor(
    () => sdk(installs[1]!),
    (r) => r.body.campaigns.length === 0,
    { what: 'the control group to hold everyone out', timeoutMs: 30_000 },
  )
  // Update with a new phone file for creative 1 and a second creative with its own page.
  const second = await multipart(sluice, tenant.auth, 'PUT', `${base}/${id}`, [
    {
      name: 'data',
      value: JSON.stringify(
        inappData({
          creatives: [
            { title: 'One', percent: 50 },
            { title: 'Two', percent: 50, position: 'top' },
          ],
        }),
      ),
    },
    { name: 'file_phone_1', value: { data: Buffer.from(page('One v2')), filename: 'one.html' } },
    { name: 'file_phone_2', value: { data: Buffer.from(page('Two')), filename: 'two.html' } },
    { name: 'file_phone_3', value: { data: Buffer.from(page('Three')), filename: 'three.html' } },
  ])
  expect(second).toMatchObject({
    status: 422,
    body: { error: 'file_phone_3: there is no creative 3 (the campaign has 2)' },
  })
  const two = await multipart(sluice, tenant.auth, 'PUT', `${base}/${id}`, [
    {
      name: 'data',
      value: JSON.stringify(
        inappData({
          creatives: [
            { title: 'One', percent: 50 },
            { title: 'Two', percent: 50, position: 'top' },
          ],
        }),
      ),
    },
    { name: 'file_phone_1', value: { data: Buffer.from(page('One v2')), filename: 'one.html' } },
    { name: 'file_phone_2', value: { data: Buffer.from(page('Two')), filename: 'two.html' } },
  ])
  expect(two.status).toBe(200)
  expect(two.body.creatives.map((c) => [c.letter, c.file_phone, c.file_tablet])).toEqual([
    ['A', 'one.html', 'tablet_page.html'],
    ['B', 'two.html', undefined],
  ])
  const fresh = `inapp-c-${suffix}`
  const offer = await waitFor(
    () => sdk(fresh),
    (r) => r.body.campaigns.length === 1,
    { what: 'the updated campaign offered', timeoutMs: 30_000 },
  )
  expect(['one.html', 'two.html']).toContain(offer.body.campaigns[0]!.creative.file_name)

  // Archived: no longer offered; deleted: 404.
  expect(
    (
      await fetch(`${sluice.url}${base}/${id}/archive`, {
        method: 'PUT',
        headers: { Authorization: tenant.auth },
      })
    ).status,
  ).toBe(200)
  await waitFor(
    () => sdk(fresh),
    (r) => r.body.campaigns.length === 0,
    { what: 'the archived campaign to leave the offers', timeoutMs: 30_000 },
  )
  expect(
    (await fetch(`${sluice.url}${base}/${id}`, { method: 'DELETE', headers: { Authorization: tenant.auth } }))
      .status,
  ).toBe(204)
  expect((await api(`${base}/${id}`)).status).toBe(404)
}
