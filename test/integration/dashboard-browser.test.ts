import { readFile } from 'node:fs/promises'
import { gunzipSync } from 'node:zlib'
import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, shot, trimmed } from '../helpers/dashboard-browser.ts'
import { ADMIN_TOKEN } from '../helpers/edge.ts'
import { postSdk, postUpload, sessionRow } from '../helpers/ingestion-scenario.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'

describe('the dashboard, in Chromium', () => {
  let sluice: InProcessSluice
  let browser: Browser
  let operator: BrowserContext
  let page: Page
  beforeAll(async () => {
    ;[sluice, browser] = await Promise.all([startInProcess(), launchChromium()])
    operator = await browser.newContext({ viewport: { width: 1100, height: 800 }, acceptDownloads: true })
    page = await operator.newPage()
  })
  afterAll(async () => {
    await browser?.close()
    await sluice?.close()
  })

  // The org, app and key the operator creates through the pages.
  let orgId = 0
  let apiKey = ''
  let apiSecret = ''

  it('signs an operator in with the admin token, shows the API error on a bad one, and sets a strict cookie', async () => {
    await page.goto(`${sluice.url}/dashboard`)
    expect(page.url()).toBe(`${sluice.url}/dashboard/sign-in`)
    await page.getByLabel('Admin token').fill('not-the-token-at-all')
    await page.getByRole('button', { name: 'Sign in' }).click()
    await expect.poll(() => page.locator('#token-error').textContent()).toBe('invalid admin token')
    await shot(page, '01-sign-in-refused')

    await page.getByLabel('Admin token').fill(ADMIN_TOKEN)
    await page.getByRole('button', { name: 'Sign in' }).click()
    await page.waitForURL('**/dashboard/health')
    const [cookie] = (await operator.cookies()).filter((c) => c.name === 'sluice_session')
    expect(cookie).toMatchObject({ httpOnly: true, sameSite: 'Strict', secure: false, path: '/dashboard' })
    expect(cookie!.value).not.toContain(ADMIN_TOKEN)
    const stored = await page.evaluate<string>('JSON.stringify([{ ...localStorage }, { ...sessionStorage }])')
    expect(stored).not.toContain(ADMIN_TOKEN)
  })

  it('creates an org, an app and a key through the forms, with field errors from the API', async () => {
    await page.getByRole('link', { name: 'Orgs, apps and keys' }).click()
    await page.getByLabel('Name').first().fill('   ')
    await page.getByRole('button', { name: 'Create org' }).click()
    await expect.poll(() => page.locator('#org-name-error').textContent()).toBe('name must not be empty')

    await page.getByLabel('Name').first().fill('Acme')
    await page.getByRole('button', { name: 'Create org' }).click()
    await expect.poll(() => page.getByRole('status').first().textContent()).toMatch(/^org \d+ created$/)
    orgId = Number(new URL(page.url()).searchParams.get('org'))
    const orgs = await sluice.admin<{ id: number; name: string }[]>('GET', '/orgs')
    expect(orgs).toContainEqual(expect.objectContaining({ id: orgId, name: 'Acme' }))

    await page.locator('#app-name').fill('Acme iOS')
    await page.getByLabel('App id (optional: generated)').fill('acme ios!')
    await page.getByRole('button', { name: 'Create app' }).click()
    await expect
      .poll(() => page.locator('#app_id-error').textContent())
      .toBe('app_id: 1..128 characters of letters, digits, . _ -')
    await page.getByLabel('App id (optional: generated)').fill('acme-ios')
    await page.getByRole('button', { name: 'Create app' }).click()
    await expect.poll(() => page.getByRole('status').first().textContent()).toBe('app acme-ios created')

    await page.getByRole('button', { name: 'Create key' }).click()
    apiKey = (await page.locator('[data-new-key]').textContent()) ?? ''
    apiSecret = (await page.locator('[data-new-secret]').textContent()) ?? ''
    const keys = await sluice.admin<{ api_key: string; revoked: boolean }[]>('GET', `/orgs/${orgId}/keys`)
    expect(keys).toContainEqual({ api_key: apiKey, scopes: expect.any(Array) as unknown, revoked: false })
    expect(apiSecret.length).toBeGreaterThan(20)
    await shot(page, '02-orgs-apps-keys')
  })

  it('shows events posted through the API on the live health page', async () => {
    await page.getByRole('link', { name: 'Health' }).click()
    const metric = async (name: string) => Number(await page.locator(`[data-metric="${name}"]`).textContent())
    const [storedBefore, rejectedBefore] = [await metric('stored-total'), await metric('rejected-total')]
    const now = Date.now()
    // SDK sessions store events; server-side events of customers no device has seen are rejected.
    await postSdk(
      sluice,
      'acme-ios',
      [0, 1, 2].flatMap((i) => [
        sessionRow({
          install: `i-${i}`,
          customer: `known-${i}`,
          at: now - 60_000,
          country: 'fr',
          model: 'iPhone15,2',
        }),
        {
          type: 'e',
          uuid: `00000000-0000-4000-9000-00000000000${i}`,
          install_uuid: `i-${i}`,
          at_millis: now - 50_000,
          name: 'Opened',
          customer_ids: { customer_id: `known-${i}` },
        },
      ]),
    )
    const lines = Array.from({ length: 5 }, (_, i) =>
      JSON.stringify({
        schema_url: 'https://sluice.example/schemas/events/v0.json',
        app_uuid: 'acme-ios',
        customer_id: `stranger-${i}`,
        event_name: 'Purchase',
        event_time: now - i * 1000,
        uuid: `00000000-0000-4000-8000-00000000000${i}`,
      }),
    )
    const res = await postUpload(
      sluice,
      `Basic ${Buffer.from(`${apiKey}:${apiSecret}`).toString('base64')}`,
      lines.join('\n'),
    )
    expect(res.status).toBe(202)
    // No reload: the panel refreshes itself.
    await expect
      .poll(() => metric('rejected-total'), { timeout: 60_000, interval: 500 })
      .toBe(rejectedBefore + 5)
    const stored = async () =>
      Number(
        (await sluice.running.runtime.store.query<{ n: string }>('SELECT count() AS n FROM events'))[0]!.n,
      )
    await expect.poll(stored, { timeout: 60_000, interval: 500 }).toBeGreaterThan(storedBefore)
    await expect.poll(() => metric('stored-total'), { timeout: 30_000, interval: 500 }).toBe(await stored())
    expect(await page.locator('[data-metric="ready"]').textContent()).toBe('ready')
    expect(await trimmed(page.locator('table caption').allTextContents())).toContain(
      'Scheduler jobs (latest run)',
    )
    await shot(page, '03-health')
  })

  it('lists a dead letter, shows its error and replays it', async () => {
    const { bus, topology } = sluice.running.runtime
    await bus.produce(topology.stages.eventsWriter.topic, [
      { partition: 0, value: Buffer.from('not an event block\n') },
    ])
    await page.getByRole('link', { name: 'Dead letters' }).click()
    await expect
      .poll(async () => (await page.reload(), page.getByRole('link', { name: 'inspect' }).count()), {
        timeout: 60_000,
      })
      .toBe(1)
    await shot(page, '04-dead-letters')
    await page.getByRole('link', { name: 'inspect' }).click()
    const id = page.url().split('/').pop()!
    expect(await page.locator('[data-error]').textContent()).toMatch(/decode|block/i)
    expect(await page.locator('[data-replayed]').textContent()).toBe('never')
    await shot(page, '05-dead-letter')
    await page.getByRole('button', { name: 'Replay' }).click()
    await expect.poll(() => page.getByRole('status').first().textContent()).toMatch(/replayed at/)
    const letter = await sluice.admin<{ replayed_at: string | null }>('GET', `/dead-letters/${id}`)
    expect(letter.replayed_at).not.toBeNull()
  })

  it('enables a profile export, refreshes it and downloads its file', async () => {
    const org = await sluice.admin<{ profiledb_id: number }>('GET', `/orgs/${orgId}`)
    const patch = await fetch(`${sluice.url}/v1/profiles/cust-1`, {
      method: 'PATCH',
      headers: {
        Authorization: `Basic ${Buffer.from(`${apiKey}:${apiSecret}`).toString('base64')}`,
        'Content-Type': 'application/json',
      },
      body: JSON.stringify({ changes: [{ op: 'assign', attr: 'plan', value: 'gold' }] }),
    })
    expect(patch.status).toBe(202)
    await page.getByRole('link', { name: 'Exports' }).click()
    await page.getByLabel('Org').selectOption(String(orgId))
    await page.getByRole('button', { name: 'Show' }).click()
    await page.getByLabel('Source', { exact: true }).selectOption('profiles')
    await page.getByLabel('Source id (audience id, profile db id, or app id)').fill('999999')
    await page.getByRole('button', { name: 'Enable' }).click()
    await expect.poll(() => page.locator('div.error[role=alert]').textContent()).toMatch(/999999/)

    await page.getByLabel('Source id (audience id, profile db id, or app id)').fill(String(org.profiledb_id))
    await page.getByLabel('Job types (comma-separated; empty: all)').fill('profile')
    await page.getByRole('button', { name: 'Enable' }).click()
    await expect
      .poll(() => page.getByRole('status').first().textContent())
      .toMatch(/^enabled: export \d+ \(profile\)$/)
    const exportId = /export (\d+)/.exec((await page.getByRole('status').first().textContent()) ?? '')![1]!
    await page.getByRole('button', { name: `Refresh export ${exportId}` }).click()
    await expect
      .poll(async () => (await page.reload(), page.getByRole('link', { name: 'download' }).count()), {
        timeout: 60_000,
      })
      .toBe(1)
    await shot(page, '06-exports')
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('link', { name: 'download' }).click(),
    ])
    const file = await readFile(await download.path())
    const text = (file[0] === 0x1f && file[1] === 0x8b ? gunzipSync(file) : file).toString('utf8')
    // One JSON object per line; the customer patched above, with its attribute.
    const rows = text
      .trim()
      .split('\n')
      .map((r) => JSON.stringify(JSON.parse(r)))
    expect(rows.filter((r) => r.includes('"cust-1"') && r.includes('"gold"'))).toHaveLength(1)
  })

  it("lets an org key see its own org only, and hides the operators' pages", async () => {
    const other = await sluice.tenant('Other org', ['other-app'])
    const keyContext = await browser.newContext({ viewport: { width: 390, height: 844 } })
    const phone = await keyContext.newPage()
    await phone.goto(`${sluice.url}/dashboard/sign-in`)
    await phone.getByLabel('API key').fill(apiKey)
    await phone.getByLabel('API secret').fill('wrong-secret')
    await phone.getByRole('button', { name: 'Sign in' }).click()
    await expect.poll(() => phone.locator('#api_secret-error').textContent()).toBe('invalid credentials')
    await phone.getByLabel('API secret').fill(apiSecret)
    await phone.getByRole('button', { name: 'Sign in' }).click()
    await phone.waitForURL('**/dashboard/health')
    const stored = await phone.evaluate<string>(
      'JSON.stringify([{ ...localStorage }, { ...sessionStorage }])',
    )
    expect(stored).not.toContain(apiSecret)
    expect(await trimmed(phone.getByRole('navigation').getByRole('link').allTextContents())).not.toContain(
      'Dead letters',
    )
    await phone.goto(`${sluice.url}/dashboard/orgs?org=${other.orgId}`)
    expect(await phone.locator('[data-org]').textContent()).toBe(String(orgId))
    expect(await phone.content()).not.toContain('Other org')
    await shot(phone, '07-org-key-phone')
    const exportsPage = await phone.goto(`${sluice.url}/dashboard/exports?org=${other.orgId}`)
    expect(exportsPage!.status()).toBe(403)
    expect(await phone.getByRole('alert').textContent()).toBe('operators only (the admin token)')
    const letters = await phone.goto(`${sluice.url}/dashboard/dead-letters`)
    expect(letters!.status()).toBe(403)
    await keyContext.close()
  })

  it('sends a strict CSP and refuses a write without its CSRF token', async () => {
    const res = await page.goto(`${sluice.url}/dashboard/orgs`)
    const csp = res!.headers()['content-security-policy']!
    expect(csp).toContain("script-src 'self'")
    expect(csp).toContain("frame-ancestors 'none'")
    expect(csp).not.toContain('unsafe-inline')
    expect(await page.locator('script:not([src])').count()).toBe(0)
    const orgsBefore = await sluice.admin<unknown[]>('GET', '/orgs')
    const forged = await operator.request.post(`${sluice.url}/dashboard/orgs`, {
      form: { name: 'Forged', csrf: 'guessed' },
      maxRedirects: 0,
    })
    expect(forged.status()).toBe(403)
    expect(await forged.text()).toContain("refused: this form's CSRF token is missing or wrong")
    const crossSite = await operator.request.post(`${sluice.url}/dashboard/orgs`, {
      form: { name: 'Forged' },
      headers: { Origin: 'https://evil.example' },
      maxRedirects: 0,
    })
    expect(crossSite.status()).toBe(403)
    expect(await sluice.admin<unknown[]>('GET', '/orgs')).toEqual(orgsBefore)
  })
})
