import type { Browser, BrowserContext } from 'playwright-core'
import { signInAsOperator } from '../chromium.ts'
import { makeCustomers, sdkBodies } from '../generate.ts'
import { sleep } from '../http.ts'
import type { Progress } from '../progress.ts'
import type { SluiceUnderTest, Tenant } from '../sluice.ts'

/** Every page of the dashboard the scenario loads, in the navigation's order (docs/dashboard.md). */
export const DASHBOARD_PAGES = [
  'sign_in',
  'health',
  'orgs',
  'app_settings',
  'analytics',
  'dead_letters',
  'exports',
  'audiences',
  'audience_new',
  'audience_edit',
  'campaigns',
  'campaign_new',
  'campaign',
  'campaign_edit',
  'push',
] as const
export type DashboardPage = (typeof DASHBOARD_PAGES)[number]

/** What the pages show: one org and app, SDK sessions with a few events, an audience and a campaign. */
export interface DashboardSeed {
  tenant: Tenant
  app: string
  audienceId: number
  campaignId: number
  /** SDK rows (session starts, events, closes) stored before the pages are loaded. */
  rows: number
}

/** One page load as Chromium's Navigation and Resource Timing saw it (ms since navigation start). */
export interface PageLoad {
  status: number
  /** The load event ended. */
  loadMs: number
  /** The first byte of the page's HTML arrived (the server's part, API calls included). */
  firstByteMs: number
  /** Compressed bytes of the scripts loaded (Resource Timing's encodedBodySize: gzip as served). */
  jsBytes: number
  scripts: number
  /** The page's alerts (role=alert): the API refusals it shows (none when the page works). */
  alerts: string[]
}

const APP = 'bench-dashboard'
const CUSTOMERS = 40

/** The page's path on the edge for each page, with the seeded org, app and ids. */
export function pagePaths(s: DashboardSeed): Record<DashboardPage, string> {
  const org = s.tenant.orgId
  const q = `org=${org}&app=${s.app}`
  const campaigns = `/dashboard/campaigns/${org}/${s.app}`
  return {
    sign_in: '/dashboard/sign-in',
    health: '/dashboard/health',
    orgs: `/dashboard/orgs?org=${org}`,
    app_settings: `/dashboard/orgs/${org}/apps/${s.app}/settings`,
    analytics: `/dashboard/analytics?${q}`,
    dead_letters: '/dashboard/dead-letters',
    exports: `/dashboard/exports?org=${org}`,
    audiences: `/dashboard/audiences?${q}`,
    audience_new: `/dashboard/audiences/new?${q}`,
    audience_edit: `/dashboard/audiences/${s.audienceId}?${q}`,
    campaigns: `/dashboard/campaigns?${q}`,
    campaign_new: `${campaigns}/new/push`,
    campaign: `${campaigns}/push/${s.campaignId}`,
    campaign_edit: `${campaigns}/push/${s.campaignId}/edit`,
    push: `/dashboard/push?${q}`,
  }
}

/**
 * The data the pages show, through the APIs: an org, app and key; one SDK body of `CUSTOMERS`
 * sessions with their events, waited for until its receipt is done (the analytics charts and the
 * health page have something to draw); an audience with a behavior rule; a push campaign (a draft:
 * it never sends) with two creatives and a control group.
 */
export async function seedDashboard(sut: SluiceUnderTest, seed: number): Promise<DashboardSeed> {
  const tenant = await sut.tenant('bench-dashboard', [APP])
  const api = async (method: string, path: string, body: unknown): Promise<{ id: number }> => {
    const res = await sut.http.request(
      method,
      `/api/v6/orgs/${tenant.orgId}/apps/${APP}${path}`,
      { Authorization: tenant.auth, 'Content-Type': 'application/json' },
      JSON.stringify(body),
    )
    if (res.status !== 201) throw new Error(`${method} ${path}: ${res.status} ${res.body.slice(0, 300)}`)
    return JSON.parse(res.body) as { id: number }
  }
  const [sdk] = sdkBodies(seed, APP, makeCustomers(seed, CUSTOMERS), CUSTOMERS, Date.now())
  if (!sdk) throw new Error('no SDK body generated')
  const upload = await sut.http.request(
    'POST',
    `/v1/sdk/apps/${APP}/uploads`,
    { 'Content-Type': 'application/json' },
    sdk.body,
  )
  if (upload.status !== 202) throw new Error(`SDK upload: ${upload.status} ${upload.body.slice(0, 300)}`)
  const tx = (JSON.parse(upload.body) as { transaction_id: string }).transaction_id
  const deadline = performance.now() + 60_000
  for (;;) {
    const receipt = await sut.http.request('GET', `/v1/sdk/apps/${APP}/uploads/${tx}`)
    if (receipt.status === 200 && (JSON.parse(receipt.body) as { state: string }).state === 'done') break
    if (performance.now() > deadline) throw new Error(`SDK upload ${tx} not done in 60 s: ${receipt.body}`)
    await sleep(100)
  }
  const audience = await api('POST', '/audiences', {
    name: 'Item viewers',
    target_rules: {
      behavior_profile_operator: 'and',
      targeting_type: 'install_id',
      behavior: {
        days: 30,
        behavior_rule_operator: 'and',
        rules: [{ rule_type: 'event', event_name: 'Item Viewed', count: 1, count_operator: 'at_least' }],
      },
    },
  })
  const campaign = await api('POST', '/push/campaigns', {
    name: 'Spring sale',
    status: 'draft',
    goal: 'notify',
    audiences: {
      campaign_type: 'saved_audience',
      target_rules: { audiences: [audience.id] },
      control_group_percent: 10,
    },
    schedule: { on_schedule: { begin_date: new Date(Date.now() + 30 * 86_400_000).toISOString() } },
    creatives: [
      { percent: 50, build_attributes: { push_message: 'Spring is here', push_title: 'Spring' } },
      {
        percent: 50,
        build_attributes: { push_message: 'Spring sale: 20% off', ll_deep_link_url: 'acme://sale' },
      },
    ],
  })
  return { tenant, app: APP, audienceId: audience.id, campaignId: campaign.id, rows: sdk.rows }
}

/**
 * Read in the page once its load event ended. A string, not a function: the bench is compiled
 * without the DOM's types.
 */
const TIMING = `new Promise((resolve) => {
  const read = () => {
    const nav = performance.getEntriesByType('navigation')[0]
    if (!nav || nav.loadEventEnd === 0) return setTimeout(read, 5)
    const scripts = performance.getEntriesByType('resource').filter((r) => r.initiatorType === 'script')
    resolve({
      loadMs: nav.loadEventEnd,
      firstByteMs: nav.responseStart,
      jsBytes: scripts.reduce((n, r) => n + r.encodedBodySize, 0),
      scripts: scripts.length,
      alerts: [...document.querySelectorAll('[role="alert"]')].map((e) => e.textContent.trim()),
    })
  }
  read()
})`

type StorageState = Awaited<ReturnType<BrowserContext['storageState']>>

/** A first load: a fresh context (empty cache; `storageState`: the signed-in session's cookie), one navigation. */
async function firstLoad(
  browser: Browser,
  url: string,
  storageState: StorageState | undefined,
): Promise<PageLoad> {
  const context = await browser.newContext(storageState ? { storageState } : {})
  try {
    const tab = await context.newPage()
    let inFlight = 0
    tab.on('request', () => inFlight++)
    tab.on('requestfinished', () => inFlight--)
    tab.on('requestfailed', () => inFlight--)
    const response = await tab.goto(url, { waitUntil: 'load' })
    const timing = await tab.evaluate<Omit<PageLoad, 'status'>>(TIMING)
    // What the page still asks after its load (the audience builder's live count) is answered
    // before the context closes, so it does not weigh on the next page's load.
    const until = performance.now() + 10_000
    while (inFlight > 0 && performance.now() < until) await sleep(10)
    return { status: response?.status() ?? 0, ...timing }
  } finally {
    await context.close()
  }
}

/**
 * Loads every page up to `runs` times, each load in a fresh browser context (no cache, only the
 * session cookie), the pages taken in turn so a burst of other work on the machine spreads over all
 * of them; a round that would end past `maxMs` is not started (a loaded machine makes fewer runs,
 * not a longer bench). Before timing, an operator signs in through the form and opens every page once: the
 * session then holds the org's key the operator's pages mint on their first visit (a control-plane
 * write once per session and org, not part of a page's load), and the edge has run every page's
 * code. A load answered other than 200, or showing an API error, fails the scenario: it would time
 * a page that did not do its work.
 */
export async function measurePages(
  browser: Browser,
  sut: SluiceUnderTest,
  seed: DashboardSeed,
  limits: { runs: number; maxMs: number },
  progress: Progress,
): Promise<Record<DashboardPage, PageLoad[]>> {
  const paths = pagePaths(seed)
  const setup = await browser.newContext()
  let storageState: StorageState
  try {
    const tab = await setup.newPage()
    await signInAsOperator(tab, sut.url, sut.adminToken)
    for (const page of DASHBOARD_PAGES) if (page !== 'sign_in') await tab.goto(`${sut.url}${paths[page]}`)
    storageState = await setup.storageState()
  } finally {
    await setup.close()
  }
  const loads = Object.fromEntries(DASHBOARD_PAGES.map((p) => [p, [] as PageLoad[]])) as Record<
    DashboardPage,
    PageLoad[]
  >
  let done = 0
  progress.start('dashboard', () => `${done}/${limits.runs * DASHBOARD_PAGES.length} first loads`)
  const started = performance.now()
  try {
    for (let run = 0; run < limits.runs; run++) {
      const elapsed = performance.now() - started
      if (run > 0 && elapsed + elapsed / run > limits.maxMs) break
      for (const page of DASHBOARD_PAGES) {
        const load = await firstLoad(
          browser,
          `${sut.url}${paths[page]}`,
          page === 'sign_in' ? undefined : storageState,
        )
        if (load.status !== 200 || load.alerts.length > 0)
          throw new Error(`${paths[page]}: answered ${load.status}; alerts: ${JSON.stringify(load.alerts)}`)
        loads[page].push(load)
        done++
      }
    }
  } finally {
    progress.stop()
  }
  return loads
}
