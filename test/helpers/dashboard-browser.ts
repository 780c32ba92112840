import { mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { chromium, type Browser, type Page } from 'playwright-core'
import { ADMIN_TOKEN } from './edge.ts'

/** Screenshots of every dashboard page, for a person to look at (gitignored). */
export const SHOTS = join(import.meta.dirname, '..', '..', 'test-output', 'dashboard')

/** How the tests run Debian's chromium: headless, and nothing that reaches out to the network. */
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
  '--no-first-run',
]

/** Debian's chromium (/usr/bin/chromium, installed by .ci/run), with the screenshot folder ready. */
export function launchChromium(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true })
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS })
}

/** A full-page screenshot under test-output/dashboard/<name>.png. */
export const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })

/** Signs in through the form with the admin token (an operator) and waits for the health page. */
export async function signInAsOperator(page: Page, url: string, token = ADMIN_TOKEN): Promise<void> {
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

/** The texts of some elements without the whitespace the page's formatting puts around them. */
export const trimmed = async (texts: Promise<string[]>) => (await texts).map((t) => t.trim())
