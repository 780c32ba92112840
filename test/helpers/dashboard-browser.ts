import { mkdirSync } from 'node:fs'
import { get } from 'node:http'
import { join } from 'node:path'
import type { Browser, Page } from 'playwright-core'
import {
  launchChromium as launchBrowser,
  signInAsOperator as signIn,
  signInWithKey,
} from '../../bench/chromium.ts'
import { ADMIN_TOKEN } from './edge.ts'

/** Screenshots of every dashboard page, for a person to look at (gitignored). */
export const SHOTS = join(import.meta.dirname, '..', '..', 'test-output', 'dashboard')

/** Debian's chromium (bench/chromium.ts: the bench drives it alike), with the screenshot folder ready. */
export function launchChromium(): Promise<Browser> {
  mkdirSync(SHOTS, { recursive: true })
  return launchBrowser()
}

/** A full-page screenshot under test-output/dashboard/<name>.png. */
export const shot = (page: Page, name: string) =>
  page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true })

/** Signs in through the form with the admin token (an operator) and waits for the health page. */
export const signInAsOperator = (page: Page, url: string, token = ADMIN_TOKEN): Promise<void> =>
  signIn(page, url, token)

export { signInWithKey }

/** The texts of some elements without the whitespace the page's formatting puts around them. */
export const trimmed = async (texts: Promise<string[]>) => (await texts).map((t) => t.trim())

/** The budget of JavaScript one dashboard page may load, gzipped (docs/dashboard.md). */
export const JS_BUDGET_GZIP_BYTES = 250 * 1024

/**
 * The bytes on the wire of the scripts a page references, as the edge sends them to a browser
 * that accepts gzip (read raw: no client decompresses them first).
 */
export async function scriptBytesGzipped(page: Page): Promise<number> {
  const sources = await page
    .locator('script[src]')
    .evaluateAll((scripts) => scripts.map((s) => (s as unknown as { src: string }).src))
  const sizes = await Promise.all(
    sources.map(
      (src) =>
        new Promise<number>((resolve, reject) => {
          get(src, { headers: { 'Accept-Encoding': 'gzip' } }, (res) => {
            if (res.statusCode !== 200 || res.headers['content-encoding'] !== 'gzip')
              reject(new Error(`${src}: ${res.statusCode} ${res.headers['content-encoding']}`))
            let n = 0
            res.on('data', (chunk: Buffer) => (n += chunk.length))
            res.on('end', () => resolve(n))
          }).on('error', reject)
        }),
    ),
  )
  return sizes.reduce((a, b) => a + b, 0)
}
