import { execFileSync } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  assetFileName,
  checkAsset,
  DEFAULT_ASSET_LIMITS,
  safeEntryName,
} from '../../pipelines/campaigns/inapp-assets.ts'
import { makeZip } from '../helpers/zip.ts'

const limits = { ...DEFAULT_ASSET_LIMITS, maxFileBytes: 1024 * 1024, maxUnzippedBytes: 256 * 1024 }
const page = '<!doctype html><html><body><h1>Hello</h1></body></html>'

describe('in-app creative files', () => {
  it('accepts an HTML page and a zip with index.html, by their content', async () => {
    expect(await checkAsset(Buffer.from(page), 'promo.html', limits)).toMatchObject({
      ok: true,
      kind: 'html',
      bytes: page.length,
    })
    const zip = makeZip([
      { name: 'index.html', data: page },
      { name: 'img/', data: '' },
      { name: 'img/logo.svg', data: '<svg/>' },
    ])
    expect(await checkAsset(zip, 'creative.zip', limits)).toMatchObject({
      ok: true,
      kind: 'zip',
      entries: 3,
      unzippedBytes: page.length + 6,
    })
    // One top-level folder holding index.html is fine too.
    expect(
      await checkAsset(makeZip([{ name: 'promo/index.html', data: page }]), 'a.zip', limits),
    ).toMatchObject({ ok: true })
  })

  it('accepts a zip made by the zip tool', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'zip-'))
    writeFileSync(join(dir, 'index.html'), page)
    writeFileSync(join(dir, 'style.css'), 'h1 { color: red }')
    execFileSync('zip', ['-q', '-r', 'c.zip', 'index.html', 'style.css'], { cwd: dir })
    const { readFileSync } = await import('node:fs')
    expect(await checkAsset(readFileSync(join(dir, 'c.zip')), 'c.zip', limits)).toMatchObject({
      ok: true,
      kind: 'zip',
      entries: 2,
    })
  })

  it('refuses files that are neither, or whose name lies about what they are', async () => {
    expect(await checkAsset(Buffer.from('just text, no markup'), 'a.html', limits)).toEqual({
      ok: false,
      reason: 'is neither an HTML document nor a zip archive',
    })
    expect(await checkAsset(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0, 1, 2]), 'a.png', limits)).toMatchObject({
      ok: false,
    })
    expect(await checkAsset(Buffer.from(page), 'a.zip', limits)).toEqual({
      ok: false,
      reason: 'is named a.zip but is not a zip archive',
    })
    expect(await checkAsset(makeZip([{ name: 'index.html', data: page }]), 'a.html', limits)).toEqual({
      ok: false,
      reason: 'is named a.html but is a zip archive',
    })
    expect(await checkAsset(Buffer.alloc(0), 'a.html', limits)).toEqual({ ok: false, reason: 'is empty' })
    expect(await checkAsset(Buffer.alloc(limits.maxFileBytes + 1, 60), 'a.html', limits)).toEqual({
      ok: false,
      reason: `is larger than ${limits.maxFileBytes} bytes`,
    })
  })

  it('refuses zips with paths outside the archive, links, or no index.html', async () => {
    for (const name of ['../evil.html', 'a/../../evil.html', '/etc/passwd', 'C:/x.html']) {
      const r = await checkAsset(
        makeZip([
          { name: 'index.html', data: page },
          { name, data: 'x' },
        ]),
        'a.zip',
        limits,
      )
      expect(r.ok).toBe(false)
      expect(r.ok ? '' : r.reason).toMatch(/outside the archive|not a readable zip archive/)
    }
    expect(
      await checkAsset(
        makeZip([
          { name: 'index.html', data: page },
          { name: 'l', data: '/etc', mode: 0o120777 },
        ]),
        'a.zip',
        limits,
      ),
    ).toEqual({
      ok: false,
      reason: 'holds a symbolic link: "l"',
    })
    expect(await checkAsset(makeZip([{ name: 'main.html', data: page }]), 'a.zip', limits)).toEqual({
      ok: false,
      reason: 'holds no index.html at its root (or in its one top-level folder)',
    })
    expect(safeEntryName('a/b.html')).toBe(true)
    expect(safeEntryName('a\\..\\b')).toBe(false)
  })

  it('refuses size bombs, whether the sizes are declared or hidden', async () => {
    const zeros = Buffer.alloc(limits.maxUnzippedBytes + 1)
    expect(
      await checkAsset(
        makeZip([
          { name: 'index.html', data: page },
          { name: 'big.bin', data: zeros },
        ]),
        'a.zip',
        limits,
      ),
    ).toEqual({
      ok: false,
      reason: `inflates to more than ${limits.maxUnzippedBytes} bytes`,
    })
    // The directory claims 10 bytes; inflating tells the truth.
    const liar = makeZip([
      { name: 'index.html', data: page },
      { name: 'big.bin', data: zeros, declaredSize: 10 },
    ])
    const r = await checkAsset(liar, 'a.zip', limits)
    expect(r.ok).toBe(false)
    // Under the size cap but inflating 1000 times: a bomb's ratio.
    const ratio = await checkAsset(
      makeZip([{ name: 'index.html', data: Buffer.alloc(200 * 1024, 32) }]),
      'a.zip',
      limits,
    )
    expect(ratio).toEqual({ ok: false, reason: 'inflates more than 100 times its size (a size bomb?)' })
  })

  it('stores names safely', () => {
    expect(assetFileName('../../etc/passwd', 'x.html')).toBe('passwd')
    expect(assetFileName('C:\\Users\\me\\My Promo (1).html', 'x.html')).toBe('My_Promo_1_.html')
    expect(assetFileName('.hidden', 'phone_1.html')).toBe('hidden')
    expect(assetFileName(undefined, 'phone_1.html')).toBe('phone_1.html')
  })
})
