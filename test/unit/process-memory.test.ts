import { readFile } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import {
  MALLOC_ARENA_MAX,
  MAIN_SEMI_SPACE_MB,
  NODE_MEMORY_FLAGS,
  processMemoryWarning,
  WORKER_RESOURCE_LIMITS,
  WORKER_SEMI_SPACE_MB,
  withProcessMemorySettings,
} from '../../services/shared/process-memory.ts'

const file = (path: string) => readFile(new URL(`../../${path}`, import.meta.url), 'utf8')

describe('process memory settings', () => {
  it('adds MALLOC_ARENA_MAX=2 to an environment without it and keeps the rest', () => {
    const env = withProcessMemorySettings({ PATH: '/bin', SLUICE_DATA_DIR: '/d' })
    expect(env).toEqual({ PATH: '/bin', SLUICE_DATA_DIR: '/d', MALLOC_ARENA_MAX: '2' })
    expect(MALLOC_ARENA_MAX).toBe('2')
  })

  it("keeps an operator's own value", () => {
    expect(withProcessMemorySettings({ MALLOC_ARENA_MAX: '8' }).MALLOC_ARENA_MAX).toBe('8')
  })

  it('caps the young generation of the main thread (8 MB semi-spaces) and of worker threads (4 MB)', () => {
    expect(NODE_MEMORY_FLAGS).toEqual([`--max-semi-space-size=${MAIN_SEMI_SPACE_MB}`])
    expect(MAIN_SEMI_SPACE_MB).toBe(8)
    expect(WORKER_RESOURCE_LIMITS).toEqual({ maxYoungGenerationSizeMb: 3 * WORKER_SEMI_SPACE_MB })
    expect(WORKER_SEMI_SPACE_MB).toBe(4)
  })

  it('warns about what is missing: the arena limit on Linux only, the semi-space cap anywhere', () => {
    const flags = ['--max-semi-space-size=8']
    expect(processMemoryWarning(undefined, flags, 'linux')).toMatch(/^started without MALLOC_ARENA_MAX=2: /)
    expect(processMemoryWarning(undefined, [], 'linux')).toMatch(
      /^started without MALLOC_ARENA_MAX=2 and --max-semi-space-size=8: .*docs\/memory\.md/,
    )
    expect(processMemoryWarning('2', [], 'darwin')).toMatch(/^started without --max-semi-space-size=8: /)
    expect(processMemoryWarning(undefined, flags, 'darwin')).toBeUndefined()
    // An operator's own values count as set.
    expect(processMemoryWarning('16', ['--max_semi_space_size=32'], 'linux')).toBeUndefined()
  })

  // The settings are spelled out where they must be read before any code runs: kept equal here.
  it('bin/sluice.js, npm start and the Docker image start Sluice with them', async () => {
    const [, shellLine] = (await file('bin/sluice.js')).split('\n')
    expect(shellLine).toBe(
      `':' //; exec env MALLOC_ARENA_MAX="\${MALLOC_ARENA_MAX:-${MALLOC_ARENA_MAX}}" node ${NODE_MEMORY_FLAGS.join(' ')} "$0" "$@"`,
    )
    const pkg = JSON.parse(await file('package.json')) as { scripts: Record<string, string> }
    expect(pkg.scripts.start).toBe('./bin/sluice.js start')
    expect(await file('Dockerfile')).toMatch(/^ENTRYPOINT \["\/app\/bin\/sluice\.js"\]$/m)
  })
})
