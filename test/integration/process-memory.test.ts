import { readFile } from 'node:fs/promises'
import { afterAll, beforeAll, describe, expect, it } from 'vitest'
import { startSluice, type SluiceChild } from '../helpers/sluice-process.ts'
import { tempDir } from '../helpers/temp.ts'

/** The environment and command line of a running process, as the kernel has them. */
async function processOf(pid: number): Promise<{ env: Map<string, string>; argv: string[] }> {
  const entries = (await readFile(`/proc/${pid}/environ`, 'utf8')).split('\0').filter(Boolean)
  const env = new Map(entries.map((e) => [e.slice(0, e.indexOf('=')), e.slice(e.indexOf('=') + 1)]))
  const argv = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').filter(Boolean)
  return { env, argv }
}

// glibc reads MALLOC_ARENA_MAX once, at process start (docs/memory.md): these start Sluice the
// ways users do and look at the process that runs, not at the launcher.
describe('memory settings of a started Sluice', { timeout: 120_000 }, () => {
  let dir: Awaited<ReturnType<typeof tempDir>>
  let sluice: SluiceChild | undefined
  const saved = process.env.MALLOC_ARENA_MAX
  beforeAll(async () => {
    dir = await tempDir('process-memory')
    delete process.env.MALLOC_ARENA_MAX
  })
  afterAll(async () => {
    await sluice?.stop()
    if (saved !== undefined) process.env.MALLOC_ARENA_MAX = saved
    await dir.cleanup()
  })

  it('bin/sluice.js run directly becomes node, same PID, with MALLOC_ARENA_MAX=2, and stops on SIGTERM', async () => {
    sluice = await startSluice({ SLUICE_DATA_DIR: `${dir.path}/direct` }, ['start'], undefined, true)
    const pid = sluice.child.pid ?? -1
    const { env, argv } = await processOf(pid)
    // The shell exec'd node in its place: the PID the launcher got is node's, so signals and kill -9 reach it.
    expect(argv[0]).toMatch(/(^|\/)node$/)
    expect(argv.slice(1)).toEqual([
      '--max-semi-space-size=8',
      expect.stringMatching(/bin\/sluice\.js$/),
      'start',
    ])
    expect(env.get('MALLOC_ARENA_MAX')).toBe('2')
    expect(sluice.output()).not.toContain('started without')
    expect(await sluice.stop(), sluice.output()).toBe(0)
    sluice = undefined
  })

  it("keeps an operator's own MALLOC_ARENA_MAX", async () => {
    sluice = await startSluice(
      { SLUICE_DATA_DIR: `${dir.path}/own`, MALLOC_ARENA_MAX: '4' },
      ['start'],
      undefined,
      true,
    )
    expect((await processOf(sluice.child.pid ?? -1)).env.get('MALLOC_ARENA_MAX')).toBe('4')
    expect(await sluice.stop(), sluice.output()).toBe(0)
    sluice = undefined
  })

  it('node bin/sluice.js start without them logs a warning naming both', async () => {
    sluice = await startSluice({ SLUICE_DATA_DIR: `${dir.path}/node` })
    expect((await processOf(sluice.child.pid ?? -1)).env.has('MALLOC_ARENA_MAX')).toBe(false)
    const warning = sluice
      .output()
      .split('\n')
      .filter((line) => line.includes('started without'))
      .map((line) => JSON.parse(line) as { level: number; msg: string })
    expect(warning).toHaveLength(1)
    expect(warning[0]?.level).toBe(40)
    expect(warning[0]?.msg).toMatch(/^started without MALLOC_ARENA_MAX=2 and --max-semi-space-size=8: /)
    const code = await sluice.stop()
    expect(code, sluice.output()).toBe(0)
    sluice = undefined
  })
})
