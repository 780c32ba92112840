import type { Browser, BrowserContext, Page } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { launchChromium, shot, signInAsOperator } from '../helpers/dashboard-browser.ts'
import { postSdk, sessionRow } from '../helpers/ingestion-scenario.ts'
import { startInProcess, type InProcessSluice } from '../helpers/sluice-inprocess.ts'

const APP = 'shop-ios'

/** The Analytics, Audiences and app settings pages, driven in Chromium against a whole Sluice. */
describe('the dashboard analytics, audiences and app settings, in Chromium', () => {
  let sluice: InProcessSluice
  let browser: Browser
  let operator: BrowserContext
  let page: Page
  let tenant: { orgId: number; auth: string; apiKey: string }

  beforeAll(async () => {
    ;[sluice, browser] = await Promise.all([startInProcess(), launchChromium()])
    tenant = await sluice.tenant('Shop', [APP])
    operator = await browser.newContext({ viewport: { width: 1100, height: 800 } })
    page = await operator.newPage()
    await signInAsOperator(page, sluice.url)
  })
  afterAll(async () => {
    await browser?.close()
    await sluice?.close()
  })

  const count = async (sql: string) =>
    Number((await sluice.running.runtime.store.query<{ n: string }>(sql, { app: APP }))[0]!.n)
  /** The numbers uPlot drew for a chart (one array per series), as the page's script records them. */
  const drawn = async (id: string) =>
    JSON.parse((await page.locator(`#chart-${id}`).getAttribute('data-drawn')) ?? 'null') as number[][]
  const sum = (values: number[]) => values.reduce((a, b) => a + b, 0)
  /** A table's rows as { first cell: the other cells }. */
  const tableOf = async (id: string) => {
    const trs = page.locator(`[data-table="${id}"] tbody tr`)
    const rows: string[][] = []
    for (let i = 0; i < (await trs.count()); i++)
      rows.push((await trs.nth(i).locator('td').allTextContents()).map((t) => t.trim()))
    return Object.fromEntries(rows.map(([key, ...rest]) => [key, rest])) as Record<string, string[]>
  }

  it('draws the app’s users, sessions and events from the Query API, and the chart changes as events arrive', async () => {
    await page.getByRole('link', { name: 'Analytics' }).click()
    await page.getByLabel('Org').selectOption(String(tenant.orgId))
    await page.getByRole('button', { name: 'Show' }).click()
    await expect.poll(() => page.getByLabel('App', { exact: true }).inputValue()).toBe(APP)
    // Nothing stored yet: every day of the range is drawn, at 0.
    const before = await drawn('daily')
    expect(before).toHaveLength(3)
    expect(before[0]).toHaveLength(30)
    expect(before.map(sum)).toEqual([0, 0, 0])
    expect(await page.locator('#chart-daily canvas').count()).toBeGreaterThan(0)

    // Every row on one UTC day (the app's zone): a run in the first two minutes of a day puts them
    // just before its midnight, or each user would count on two days.
    const clock = Date.now()
    const today = clock - (clock % 86_400_000)
    const now = clock - 120_000 >= today ? clock : today - 1
    const installs = [
      { install: 'i-0', country: 'fr', app_ver: '2.1.0' },
      { install: 'i-1', country: 'fr', app_ver: '2.1.0' },
      { install: 'i-2', country: 'de', app_ver: '3.0.0' },
    ]
    const purchases = [0, 0, 1, 2, 2]
    await postSdk(sluice, APP, [
      ...installs.map((i) =>
        sessionRow({ ...i, customer: `c-${i.install}`, at: now - 120_000, model: 'iPhone15,2' }),
      ),
      ...purchases.map((n, k) => ({
        type: 'e',
        uuid: `00000000-0000-4000-9000-00000000001${k}`,
        install_uuid: `i-${n}`,
        at_millis: now - 60_000 + k,
        name: 'Purchase',
        customer_ids: { customer_id: `c-i-${n}` },
      })),
      {
        type: 'e',
        uuid: '00000000-0000-4000-9000-000000000020',
        install_uuid: 'i-1',
        at_millis: now - 50_000,
        name: 'Opened',
        customer_ids: { customer_id: 'c-i-1' },
      },
    ])
    await expect
      .poll(() => count('SELECT count() AS n FROM events WHERE app_id = {app:String}'), { timeout: 60_000 })
      .toBe(6)
    await expect
      .poll(() => count('SELECT count() AS n FROM sessions WHERE app_id = {app:String}'), { timeout: 60_000 })
      .toBe(3)
    // The charts read the rollup (migration 027), whose rows the same insert writes through a view
    // just after the table's part is committed: on a busy engine the table shows them first.
    await expect
      .poll(
        () =>
          count(
            `SELECT sum(occurrences) + 1000 * uniqMergeIf(sessions, kind = 's') AS n
             FROM query_rollup WHERE app_id = {app:String}`,
          ),
        { timeout: 60_000 },
      )
      .toBe(6 + 1000 * 3)

    await page.reload()
    const after = await drawn('daily')
    expect(after[0]).toHaveLength(30)
    // users (installs), occurrences (events), over the range's days.
    expect(sum(after[0]!)).toBe(3)
    expect(sum(after[2]!)).toBe(6)
    expect(sum(after[1]!)).toBeGreaterThanOrEqual(3)
    const events = await tableOf('events')
    expect(events).toEqual({ Purchase: ['5', '3'], Opened: ['1', '1'] })
    expect(await drawn('events')).toEqual([[5, 1]])
    const countries = await tableOf('countries')
    expect(Object.keys(countries)).toEqual(['fr', 'de'])
    expect([countries.fr![0], countries.de![0]]).toEqual(['2', '1'])
    expect(await drawn('countries')).toEqual([[2, 1]])
    const versions = await tableOf('versions')
    expect([versions['2.1.0']![0], versions['3.0.0']![0]]).toEqual(['2', '1'])
    await page.locator('#title-countries ~ details summary').click()
    await shot(page, '10-analytics')

    // The query shown is the one the chart answers: run as printed, it gives the table's rows.
    const curl = (await page.locator('#query-countries').textContent()) ?? ''
    expect(curl).toContain(`${sluice.url}/v1/query`)
    const body = /-d '(.*)'$/.exec(curl)![1]!
    const res = await fetch(`${sluice.url}/v1/query`, {
      method: 'POST',
      headers: { Authorization: tenant.auth, 'Content-Type': 'application/json' },
      body,
    })
    const answer = (await res.json()) as { results: { country: string; users: number }[] }
    expect(answer.results.map((r) => [r.country, r.users])).toEqual([
      ['fr', 2],
      ['de', 1],
    ])
  })

  it('shows a bad date range next to its field', async () => {
    const url = new URL(page.url())
    url.searchParams.set('from', '2026-02-30')
    await page.goto(url.toString())
    expect(await page.locator('#from-error').textContent()).toBe('from: a date, YYYY-MM-DD')
    expect(await page.locator('[data-chart]').count()).toBe(0)
  })

  type Listed = { id: number; name: string; segmentation_count: { user_count: number } }[]
  const audiences = async () =>
    (await (
      await fetch(`${sluice.url}/api/v6/orgs/${tenant.orgId}/apps/${APP}/audiences`, {
        headers: { Authorization: tenant.auth },
      })
    ).json()) as Listed
  const liveCount = () => page.locator('[data-live-count]').textContent({ timeout: 30_000 })

  it('builds an audience with a live count, shows the API’s errors by their fields, edits and deletes it', async () => {
    await page.goto(`${sluice.url}/dashboard/audiences?org=${tenant.orgId}&app=${APP}`)
    expect(await page.locator('.empty').textContent()).toContain('none yet')
    await page.getByRole('link', { name: 'New audience' }).click()
    // No rule: every install of the app.
    await expect.poll(liveCount, { timeout: 30_000 }).toBe('3')
    const rule1 = page.getByRole('group', { name: 'Rule 1' })
    await rule1.getByLabel('Kind', { exact: true }).selectOption('event')
    await rule1.getByLabel('Event name', { exact: true }).fill('Purchase')
    await rule1.getByLabel('Count (empty: at least one)').fill('2')
    // i-0 and i-2 bought twice, i-1 once.
    await expect.poll(liveCount, { timeout: 30_000 }).toBe('2')
    await rule1.getByLabel('Count (empty: at least one)').fill('1')
    await expect.poll(liveCount, { timeout: 30_000 }).toBe('3')

    // The API's messages, under the inputs they name, as the rules are typed.
    await page
      .getByRole('group', { name: 'Rule 2' })
      .getByLabel('Kind', { exact: true })
      .selectOption('event')
    const criterion = page.getByRole('group', { name: 'Criterion 1' })
    await criterion.getByLabel('Attribute').fill('renewal')
    await criterion.getByLabel('Operator').selectOption('before')
    await expect
      .poll(() => page.locator('#f-behavior-rules-1-event-name-error').textContent(), { timeout: 30_000 })
      .toBe('event_name is required for a event rule')
    await expect
      .poll(() => page.locator('#f-profile-criteria-0-values-error').textContent())
      .toBe('before takes exactly one value, got 0')
    expect(await page.locator('[data-live-count-error]').count()).toBe(1)
    await shot(page, '11-audience-builder-errors')
    await page.getByRole('group', { name: 'Rule 2' }).getByLabel('Kind', { exact: true }).selectOption('')
    await criterion.getByLabel('Attribute').fill('')
    await expect.poll(liveCount, { timeout: 30_000 }).toBe('3')
    expect(await page.locator('#f-behavior-rules-1-event-name-error').textContent()).toBe('')

    // Saving without a name: the API's message under the name.
    await rule1.getByLabel('Count (empty: at least one)').fill('2')
    await page.getByRole('button', { name: 'Create audience' }).click()
    await expect.poll(() => page.locator('#f-name-error').textContent()).toBe('name must not be empty')
    await page.getByLabel('Name', { exact: true }).fill('Buyers')
    await page.getByRole('button', { name: 'Create audience' }).click()
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toMatch(/^audience \d+ created: 2 installs$/)
    const [created] = await audiences()
    expect(created).toMatchObject({ name: 'Buyers', segmentation_count: { user_count: 2 } })
    expect(await page.locator(`[data-count="${created!.id}"]`).textContent()).toBe('2')
    await shot(page, '12-audiences')

    // Edit: the builder shows the saved rules; a wider count and a new name are saved.
    await page.getByRole('link', { name: 'Edit Buyers' }).click()
    expect(await rule1.getByLabel('Event name', { exact: true }).inputValue()).toBe('Purchase')
    expect(await rule1.getByLabel('Count (empty: at least one)').inputValue()).toBe('2')
    await expect.poll(liveCount, { timeout: 30_000 }).toBe('2')
    await page.getByLabel('Name', { exact: true }).fill('Any buyers')
    await rule1.getByLabel('Count (empty: at least one)').fill('')
    await page.getByRole('button', { name: 'Save' }).click()
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toBe(`audience ${created!.id} saved: 3 installs`)
    expect(await audiences()).toMatchObject([
      { id: created!.id, name: 'Any buyers', segmentation_count: { user_count: 3 } },
    ])

    await page.getByRole('button', { name: 'Delete Any buyers' }).click()
    await expect.poll(() => page.getByRole('status').textContent()).toBe(`audience ${created!.id} deleted`)
    expect(await audiences()).toEqual([])
  })

  it('sets an app’s time zone and a custom dimension label, and the analytics days follow the zone', async () => {
    await page.goto(`${sluice.url}/dashboard/orgs?org=${tenant.orgId}`)
    await page.getByRole('link', { name: `Settings of ${APP}` }).click()
    const zone = page.getByLabel(/^Time zone/)
    expect(await zone.inputValue()).toBe('UTC')
    await zone.fill('Mars/Olympus')
    await page.getByRole('button', { name: 'Save settings' }).click()
    expect(await page.locator('#time_zone-error').textContent()).toBe(
      'time_zone "Mars/Olympus" is not an IANA time zone',
    )
    await zone.fill('Asia/Tokyo')
    await page.getByLabel('custom_0', { exact: true }).fill('Blood type')
    await shot(page, '13-app-settings')
    await page.getByRole('button', { name: 'Save settings' }).click()
    await expect
      .poll(() => page.getByRole('status').textContent())
      .toBe(`settings of app ${APP} saved (time zone Asia/Tokyo)`)
    const settings = await sluice.admin<{ time_zone: string; custom_dimensions: Record<string, string> }>(
      'GET',
      `/apps/${APP}/settings`,
    )
    expect(settings).toMatchObject({
      time_zone: 'Asia/Tokyo',
      custom_dimensions: { custom_0_dimension: 'Blood type' },
    })
    await page.goto(`${sluice.url}/dashboard/analytics?org=${tenant.orgId}&app=${APP}`)
    expect(await page.locator('[data-time-zone]').textContent()).toBe('Asia/Tokyo')
    // On a phone-sized screen the page reads in one column, its charts as wide as the screen.
    await page.setViewportSize({ width: 390, height: 844 })
    await page.reload()
    const box = await page.locator('#chart-daily canvas').first().boundingBox()
    expect(box!.width).toBeLessThanOrEqual(390)
    await shot(page, '14-analytics-phone')
  })
})
