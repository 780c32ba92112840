import { readFile } from 'node:fs/promises'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import {
  JS_BUDGET_GZIP_BYTES,
  launchChromium,
  scriptBytesGzipped,
  shot,
  signInAsOperator,
  signInWithKey,
  trimmed,
} from '../helpers/dashboard-browser.ts'
import { adminHeaders } from '../helpers/edge.ts'
import { postSdk, sdkReceiptDone, sessionRow } from '../helpers/ingestion-scenario.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'
import { EXECUTION_ENV } from './campaigns-execution-scenario.ts'
import { startDeliveryStandins, type DeliveryStandins } from './push-delivery-scenario.ts'

const APP = 'camp-ios'
/** iOS installs with APNs tokens (hex, as APNs takes them), one customer each. */
const INSTALLS = Array.from({ length: 12 }, (_, i) => ({
  install: `ci-${i}`,
  customer: `cust-${i}`,
  token: `abcd${String(i).padStart(4, '0')}`,
}))

interface Variant {
  variant: string
  assigned: number
  sent: number
  conversions: number
}

describe('the dashboard: campaigns and push, in Chromium', { timeout: 180_000 }, () => {
  let standins: DeliveryStandins
  let sluice: InProcessSluice
  let browser: Browser
  let operator: BrowserContext
  let page: Page
  let tenant: { orgId: number; auth: string; apiKey: string }
  let other: { orgId: number; auth: string; apiKey: string }

  /** The campaigns API as the org, for checking what the pages did. */
  const api = async <T>(path: string, auth = tenant.auth, org = tenant.orgId, app = APP): Promise<T> => {
    const res = await fetch(`${sluice.url}/api/v6/orgs/${org}/apps/${app}${path}`, {
      headers: { Authorization: auth },
    })
    expect(res.status).toBe(200)
    return (await res.json()) as T
  }

  beforeAll(async () => {
    standins = await startDeliveryStandins()
    ;[sluice, browser] = await Promise.all([
      startInProcess({ ...standins.env, ...EXECUTION_ENV }),
      launchChromium(),
    ])
    tenant = await sluice.tenant('Campaign org', [APP])
    other = await sluice.tenant('Other campaign org', ['other-app'])
    const transport = await fetch(`${sluice.url}/admin/v1/apps/${APP}/push/transports/ios`, {
      method: 'PUT',
      headers: adminHeaders,
      body: JSON.stringify({
        kind: 'apns',
        settings: {
          key: standins.p8.pem,
          key_id: 'KEY1234567',
          team_id: 'TEAM123456',
          topic: 'com.acme.camp',
        },
      }),
    })
    expect(transport.status).toBe(200)
    const at = Date.now() - 60_000
    await sdkReceiptDone(
      sluice,
      APP,
      await postSdk(
        sluice,
        APP,
        INSTALLS.map((i) => ({
          ...sessionRow({ install: i.install, customer: i.customer, at, country: 'fr', model: 'iPhone15,2' }),
          push_token: i.token,
        })),
      ),
    )
    operator = await browser.newContext({ viewport: { width: 1100, height: 900 } })
    page = await operator.newPage()
    await signInAsOperator(page, sluice.url)
  })
  afterAll(async () => {
    await browser?.close()
    await sluice?.close()
    await standins?.close()
  })

  let campaignId = 0

  it("creates and schedules a push campaign through the form, with the API's errors next to their fields", async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Campaigns' }).click()
    await page.getByLabel('Org', { exact: true }).selectOption(String(tenant.orgId))
    await page.getByRole('button', { name: 'Show' }).click()
    expect(await page.getByLabel('App', { exact: true }).inputValue()).toBe(APP)
    await page.getByRole('link', { name: 'New push campaign' }).click()

    // Two broken rules at once: each message under its own field.
    await page.getByLabel('Name', { exact: true }).fill('   ')
    await page.getByLabel('When').selectOption('on_schedule')
    await page.getByLabel(/^Begin/).fill('next tuesday')
    await page.getByRole('button', { name: 'Create campaign' }).click()
    await expect.poll(() => page.locator('#f-name-error').textContent()).toBe('must not be empty')
    expect(await page.locator('#f-schedule-begin_date-error').textContent()).toBe(
      'must be an ISO 8601 date-time such as 2025-06-01T09:30:00Z; is not a valid date-time',
    )
    expect(await page.getByLabel(/^Begin/).inputValue()).toBe('next tuesday')

    // A/B with a control group, scheduled a few seconds ahead; the second creative's fields come
    // from "Add a creative" (no script: the server renders one more).
    const begin = new Date(Date.now() + 8000).toISOString()
    await page.getByLabel('Name', { exact: true }).fill('Spring sale')
    await page.getByLabel('Status', { exact: true }).selectOption('active')
    await page.getByLabel('Conversion event (optional)').fill('Purchase')
    await page.getByLabel('Control group (% held out)').fill('25')
    await page.getByLabel(/^Begin/).fill(begin)
    await page.getByLabel('Creative A title', { exact: true }).fill('Spring A')
    await page.getByLabel('Creative A percent').fill('50')
    await page.getByLabel('Creative A message').fill('Spring is here')
    await page.getByRole('button', { name: 'Add a creative' }).click()
    await page.getByLabel('Creative B title', { exact: true }).fill('Spring B')
    await page.getByLabel('Creative B percent').fill('50')
    await page.getByLabel('Creative B message').fill('Spring sale: 20% off')
    await page.getByLabel('Creative B deep link url').fill('acme://sale')
    await shot(page, '10-campaign-form')
    await page.getByRole('button', { name: 'Create campaign' }).click()
    await expect.poll(() => page.getByRole('status').first().textContent()).toMatch(/^campaign \d+ created$/)
    campaignId = Number(/campaign (\d+)/.exec((await page.getByRole('status').first().textContent())!)![1])

    const stored = await api<{
      name: string
      status: string
      conversion_event: { event_name: string }
      audiences: { control_group_percent: number }
      schedule: { on_schedule: { begin_date: string } }
      creatives: { letter: string; percent: number; build_attributes: Record<string, string> }[]
    }>(`/push/campaigns/${campaignId}`)
    expect(stored).toMatchObject({
      name: 'Spring sale',
      status: 'active',
      conversion_event: { event_name: 'Purchase' },
      audiences: { control_group_percent: 25 },
      schedule: { on_schedule: { begin_date: begin } },
    })
    expect(stored.creatives.map((c) => [c.letter, c.percent, c.build_attributes])).toEqual([
      ['A', 50, { push_message: 'Spring is here' }],
      ['B', 50, { push_message: 'Spring sale: 20% off', ll_deep_link_url: 'acme://sale' }],
    ])
  })

  it('shows the campaign deliveries and its performance per variant and control as they happen', async () => {
    const sent = () => page.locator('[data-delivery="sent"]')
    await expect
      .poll(
        async () => (await page.reload(), (await sent().count()) ? Number(await sent().textContent()) : -1),
        {
          timeout: 90_000,
          interval: 1000,
        },
      )
      .toBeGreaterThan(0)
    const performance = await api<{ variants: Variant[] }>(`/push/campaigns/${campaignId}/performance`)
    const targeted = performance.variants.filter((v) => v.variant !== 'control')
    const expectedSent = targeted.reduce((n, v) => n + v.assigned, 0)
    await expect
      .poll(async () => (await page.reload(), Number(await sent().textContent())), { timeout: 60_000 })
      .toBe(expectedSent)
    // Every install assigned once, the control group held back, the rest sent to APNs.
    expect(performance.variants.reduce((n, v) => n + v.assigned, 0)).toBe(INSTALLS.length)
    expect(Number(await page.locator('[data-delivery="failed"]').textContent())).toBe(0)
    const delivered = standins.apns.received.filter((r) =>
      INSTALLS.some((i) => i.token === r.token && JSON.stringify(r.body).includes('Spring')),
    )
    expect(delivered).toHaveLength(expectedSent)
    // The performance table says what the API says, a row per variant.
    const now = await api<{ variants: Variant[] }>(`/push/campaigns/${campaignId}/performance`)
    const rows = await page.locator('table:has(caption:text("Performance per variant")) tbody tr').all()
    expect(
      await Promise.all(
        rows.map(async (r) => (await trimmed(r.locator('td').allTextContents())).slice(0, 5)),
      ),
    ).toEqual(
      now.variants.map((v): unknown[] => [
        v.variant,
        String(v.assigned),
        expect.any(String),
        String(v.sent),
        '0',
      ]),
    )
    expect(await page.locator('[data-status]').textContent()).toBe('sent')
    await shot(page, '11-campaign-performance')
  })

  it('lists, searches and filters campaigns as the campaigns API does', async () => {
    await page.goto(`${sluice.url}/dashboard/campaigns?org=${tenant.orgId}&app=${APP}`)
    expect(await page.locator(`[data-campaign-status="${campaignId}"]`).textContent()).toBe('sent')
    await page.getByLabel('Search (id or part of the name)').fill('spring')
    await page.getByRole('button', { name: 'Filter' }).click()
    const listed = await api<{ campaigns: { id: number; name: string; sends: number }[] }>(
      '/campaigns/search?key=spring',
    )
    expect(listed.campaigns.map((c) => c.id)).toEqual([campaignId])
    expect(await trimmed(page.locator('table tbody tr td:nth-child(2)').allTextContents())).toEqual([
      'Spring sale',
    ])
    expect(await page.locator('table tbody tr td:nth-child(6)').textContent()).toBe(
      String(listed.campaigns[0]!.sends),
    )
    await page.getByLabel('status', { exact: true }).selectOption('draft')
    await page.getByRole('button', { name: 'Filter' }).click()
    expect(await page.locator('p.empty').textContent()).toMatch(/none yet/)
    // A bad parameter: the API's own message beside it.
    await page.goto(`${sluice.url}/dashboard/campaigns?org=${tenant.orgId}&app=${APP}&per_page=5000`)
    expect(await page.getByRole('alert').first().textContent()).toMatch(/per_page/)
    await page.goto(`${sluice.url}/dashboard/campaigns?org=${tenant.orgId}&app=${APP}`)
    await shot(page, '12-campaigns')
  })

  it('creates an in-app campaign with its file, and names a refused file next to its field', async () => {
    await page.getByRole('link', { name: 'New in-app campaign' }).click()
    await page.getByLabel('Name', { exact: true }).fill('Welcome banner')
    await page.getByLabel(/^Begin/).fill('2026-01-01T00:00:00Z')
    await page.getByLabel('Creative A title', { exact: true }).fill('Banner')
    await page.getByLabel('Creative A phone file (HTML or zip)').setInputFiles({
      name: 'banner.zip',
      mimeType: 'application/zip',
      buffer: Buffer.from('<html><body>not a zip</body></html>'),
    })
    await page.getByRole('button', { name: 'Create campaign' }).click()
    await expect.poll(() => page.locator('#f-file_phone_1-error').textContent()).toMatch(/zip/)
    await page.getByLabel('Creative A phone file (HTML or zip)').setInputFiles({
      name: 'banner.html',
      mimeType: 'text/html',
      buffer: Buffer.from('<!doctype html><html><body><h1>Welcome</h1></body></html>'),
    })
    await page.getByRole('button', { name: 'Create campaign' }).click()
    await expect.poll(() => page.getByRole('status').first().textContent()).toMatch(/^campaign \d+ created$/)
    const id = Number(/campaign (\d+)/.exec((await page.getByRole('status').first().textContent())!)![1])
    const stored = await api<{ name: string; creatives: { file_phone: string }[] }>(`/inapp/campaigns/${id}`)
    expect(stored).toMatchObject({ name: 'Welcome banner', creatives: [{ file_phone: 'banner.html' }] })
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'banner.html' }).click(),
    ])
    expect((await readFile(await download.path())).toString()).toContain('<h1>Welcome</h1>')
    await shot(page, '13-inapp-campaign')
  })

  it("edits a campaign through its form, the API's message under the field of an edit it refuses", async () => {
    // A draft another client made through the API (a draft never sends).
    const created = await fetch(`${sluice.url}/api/v6/orgs/${tenant.orgId}/apps/${APP}/push/campaigns`, {
      method: 'POST',
      headers: { Authorization: tenant.auth, 'Content-Type': 'application/json' },
      body: JSON.stringify({
        name: 'Autumn draft',
        status: 'draft',
        goal: 'notify',
        audiences: { campaign_type: 'everyone', control_group_percent: 10 },
        schedule: { on_schedule: { begin_date: '2031-03-01T09:00:00Z' } },
        creatives: [
          { title: 'Autumn', build_attributes: { push_message: 'Leaves are falling', push_title: 'Autumn' } },
        ],
      }),
    })
    expect(created.status).toBe(201)
    const id = ((await created.json()) as { id: number }).id
    interface Stored {
      name: string
      status: string
      audiences: { control_group_percent: number }
      schedule: Record<string, unknown>
      creatives: { id: number; letter: string; title: string; build_attributes: Record<string, string> }[]
    }
    const before = await api<Stored>(`/push/campaigns/${id}`)

    await page.goto(`${sluice.url}/dashboard/campaigns?org=${tenant.orgId}&app=${APP}`)
    await page.getByRole('link', { name: `open campaign ${id}` }).click()
    await page.getByRole('link', { name: 'Edit', exact: true }).click()
    // The form holds what the API answered.
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('Autumn draft')
    expect(await page.getByLabel('When').inputValue()).toBe('on_schedule')
    expect(await page.getByLabel(/^Begin/).inputValue()).toBe('2031-03-01T09:00:00Z')
    expect(await page.getByLabel('Creative A message').inputValue()).toBe('Leaves are falling')
    expect(await page.getByLabel('Control group (% held out)').inputValue()).toBe('10')

    // A new name and message, and a recurring schedule whose end comes before its begin: the API
    // refuses the whole edit, its message under End, and the form keeps what was typed.
    await page.getByLabel('Name', { exact: true }).fill('Autumn sale')
    await page.getByLabel('Creative A message').fill('Autumn sale: 30% off')
    await page.getByLabel('When').selectOption('recurring')
    await page.getByLabel(/^Begin/).fill('2031-03-01T09:00:00Z')
    await page.getByLabel('End (recurring)').fill('2031-02-01T09:00:00Z')
    await page
      .getByLabel('Intervals (recurring, JSON)')
      .fill('[{"interval": "weekly", "day_of_week": "monday"}]')
    await page.getByRole('button', { name: 'Save campaign' }).click()
    await expect
      .poll(() => page.locator('#f-schedule-end_date-error').textContent())
      .toBe('must be after begin_date')
    expect(await page.getByLabel('End (recurring)').getAttribute('aria-invalid')).toBe('true')
    expect(await page.getByLabel('Name', { exact: true }).inputValue()).toBe('Autumn sale')
    expect(await page.getByLabel('End (recurring)').inputValue()).toBe('2031-02-01T09:00:00Z')
    await shot(page, '16-campaign-edit-refused')
    expect(await api<Stored>(`/push/campaigns/${id}`)).toEqual(before)

    await page.getByLabel('End (recurring)').fill('2031-06-01T09:00:00Z')
    await page.getByRole('button', { name: 'Save campaign' }).click()
    await expect.poll(() => page.getByRole('status').first().textContent()).toBe(`campaign ${id} saved`)
    const after = await api<Stored>(`/push/campaigns/${id}`)
    expect(after).toMatchObject({
      name: 'Autumn sale',
      status: 'draft',
      audiences: { control_group_percent: 10 },
      schedule: {
        recurring: {
          begin_date: '2031-03-01T09:00:00Z',
          end_date: '2031-06-01T09:00:00Z',
          intervals: [expect.objectContaining({ interval: 'weekly', day_of_week: 'monday' })],
        },
      },
    })
    expect(after.schedule).not.toHaveProperty('on_schedule')
    // The creative is the same one (its id kept), with the new message and its title untouched.
    expect(after.creatives.map((c) => [c.id, c.letter, c.title, c.build_attributes])).toEqual([
      [
        before.creatives[0]!.id,
        'A',
        'Autumn',
        { push_message: 'Autumn sale: 30% off', push_title: 'Autumn' },
      ],
    ])

    // The campaign's page shows the saved campaign.
    expect(await page.locator('main h2').first().textContent()).toMatch(/^Autumn sale /)
    const schedule = await page.locator('dl.facts dd code').nth(1).textContent()
    expect(JSON.parse(schedule!)).toEqual(after.schedule)
    const creatives = await page.locator('table:has(caption:text("Creatives")) tbody tr').all()
    expect(
      await Promise.all(creatives.map(async (r) => await trimmed(r.locator('td').allTextContents()))),
    ).toEqual([['A', 'Autumn', '100', 'Autumn sale: 30% off']])
    // And its form, opened again, what was saved.
    await page.getByRole('link', { name: 'Edit', exact: true }).click()
    expect(await page.getByLabel('When').inputValue()).toBe('recurring')
    expect(await page.getByLabel('End (recurring)').inputValue()).toBe('2031-06-01T09:00:00Z')
    expect(await page.getByLabel('Creative A message').inputValue()).toBe('Autumn sale: 30% off')
  })

  it('sends a test push to a customer and shows it in its campaign key report', async () => {
    await page.getByRole('navigation').getByRole('link', { name: 'Push' }).click()
    await page.getByLabel('Org', { exact: true }).selectOption(String(tenant.orgId))
    await page.getByRole('button', { name: 'Show' }).click()
    await page.getByLabel('Customer id').fill('cust-3')
    await page.getByLabel('Title (optional)').fill('Test')
    await page.getByLabel('Message (empty: a silent push)').fill('Hello from the dashboard')
    await page.getByLabel('Campaign key (its report gathers these pushes)').fill('bad key')
    await page.getByRole('button', { name: 'Send test push' }).click()
    await expect.poll(() => page.locator('#push-key-error').textContent()).toMatch(/must not contain spaces/)
    await page.getByLabel('Campaign key (its report gathers these pushes)').fill('dashboard-test')
    await page.getByRole('button', { name: 'Send test push' }).click()
    await expect
      .poll(() => page.getByRole('status').first().textContent())
      .toMatch(/^test push queued: request [0-9a-f-]{36}$/)
    const report = (k: string) => page.locator(`[data-report="${k}"]`)
    await expect
      .poll(
        async () => (await page.reload(), (await report('sent').count()) ? report('sent').textContent() : ''),
        {
          timeout: 60_000,
          interval: 1000,
        },
      )
      .toBe('1')
    expect(await report('requests').textContent()).toBe('1')
    expect(await report('failed').textContent()).toBe('0')
    const received = standins.apns.received.filter((r) => r.token === 'abcd0003')
    expect(received.map((r) => r.body)).toContainEqual(
      expect.objectContaining({
        aps: expect.objectContaining({
          alert: { title: 'Test', body: 'Hello from the dashboard' },
        }) as unknown,
        campaign_key: 'dashboard-test',
      }),
    )
    await shot(page, '14-push')
  })

  it('ships at most 250 KB of JavaScript, gzipped, on each of these pages', async () => {
    const pages = [
      `/dashboard/campaigns?org=${tenant.orgId}&app=${APP}`,
      `/dashboard/campaigns/${tenant.orgId}/${APP}/new/push`,
      `/dashboard/campaigns/${tenant.orgId}/${APP}/push/${campaignId}`,
      `/dashboard/push?org=${tenant.orgId}&app=${APP}`,
    ]
    for (const path of pages) {
      await page.goto(`${sluice.url}${path}`)
      expect(await page.locator('script[src="/dashboard/assets/htmx.min.js"]').count()).toBe(1)
      const bytes = await scriptBytesGzipped(page)
      expect(bytes).toBeGreaterThan(10_000)
      expect(bytes).toBeLessThanOrEqual(JS_BUDGET_GZIP_BYTES)
    }
  })

  it("lets an org key see its own org's campaigns only, on a phone-sized screen", async () => {
    const otherCampaign = await fetch(
      `${sluice.url}/api/v6/orgs/${other.orgId}/apps/other-app/push/campaigns`,
      {
        method: 'POST',
        headers: { Authorization: other.auth, 'Content-Type': 'application/json' },
        body: JSON.stringify({
          name: 'Secret plan',
          status: 'draft',
          goal: 'notify',
          audiences: { campaign_type: 'everyone' },
          schedule: { begin_immediately: {} },
          creatives: [{ title: 'x', build_attributes: { push_message: 'x' } }],
        }),
      },
    )
    expect(otherCampaign.status).toBe(201)
    const otherId = ((await otherCampaign.json()) as { id: number }).id
    const secret = Buffer.from(tenant.auth.slice('Basic '.length), 'base64').toString().split(':')[1]!
    const keyContext = await browser.newContext({ viewport: { width: 390, height: 844 } })
    const phone = await keyContext.newPage()
    await signInWithKey(phone, sluice.url, tenant.apiKey, secret)
    await phone.goto(`${sluice.url}/dashboard/campaigns`)
    expect(await trimmed(phone.locator('table tbody tr td:nth-child(2)').allTextContents())).toEqual(
      expect.arrayContaining(['Spring sale', 'Welcome banner']),
    )
    // No horizontal scrolling on a phone: the page fits its width.
    expect(await phone.evaluate('document.documentElement.scrollWidth')).toBeLessThanOrEqual(390)
    await shot(phone, '15-campaigns-org-key-phone')

    await phone.goto(`${sluice.url}/dashboard/campaigns?org=${other.orgId}&app=other-app`)
    expect(await phone.getByRole('alert').first().textContent()).toBe(
      'app other-app does not belong to this organization',
    )
    expect(await phone.content()).not.toContain('Secret plan')
    const direct = await phone.goto(
      `${sluice.url}/dashboard/campaigns/${other.orgId}/other-app/push/${otherId}`,
    )
    expect(direct!.status()).toBe(403)
    expect(await phone.getByRole('alert').textContent()).toBe(
      `org ${other.orgId} is not the organization of this API key`,
    )
    expect(await phone.content()).not.toContain('Secret plan')
    await keyContext.close()
  })
})
