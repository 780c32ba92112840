import { accessSync, constants } from 'node:fs'
import { chromium, type Browser, type Page } from 'playwright-core'

/**
 * Debian's chromium driven by playwright-core, as the dashboard's browser tests
 * (test/helpers/dashboard-browser.ts) and the bench's dashboard scenario both drive it: one launch
 * and one sign-in for both, so the bench measures the pages the tests check.
 */

/** Debian's package (installed by .ci/run next to kcat). */
export const CHROMIUM_PATH = '/usr/bin/chromium'

/** Headless, and nothing that reaches out to the network. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
]

/** Why chromium cannot be driven here (no executable at CHROMIUM_PATH), or undefined when it can. */
export function chromiumMissing(path = CHROMIUM_PATH): string | undefined {
  try {
    accessSync(path, constants.X_OK)
    return undefined
  } catch {
    return `no chromium at ${path} (Debian package chromium)`
  }
}

export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: CHROMIUM_PATH, args: CHROMIUM_ARGS })
}

/** Signs in through the form with the admin token (an operator) and waits for the health page. */
export async function signInAsOperator(page: Page, url: string, token: string): Promise<void> {
  await page.goto(`${url}/dashboard/sign-in`)
  await page.getByLabel('Admin token').fill(token)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL('**/dashboard/health')
}

/** Signs in through the form with an org's API key and secret and waits for the health page. */
export async function signInWithKey(page: Page, url: string, apiKey: string, secret: string): Promise<void> {
  await page.goto(`${url}/dashboard/sign-in`)
  await page.getByLabel('API key').fill(apiKey)
  await page.getByLabel('API secret').fill(secret)
  await page.getByRole('button', { name: 'Sign in' }).click()
  await page.waitForURL('**/dashboard/health')
}
