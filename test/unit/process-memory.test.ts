import { describe, expect, it } from 'vitest'
import {
  MALLOC_ARENA_MAX,
  processMemoryWarning,
  withProcessMemorySettings,
} from '../../services/shared/process-memory.ts'

describe('process memory settings', () => {
  it('adds MALLOC_ARENA_MAX=2 to an environment without it and keeps the rest', () => {
    const env = withProcessMemorySettings({ PATH: '/bin', SLUICE_DATA_DIR: '/d' })
    expect(env).toEqual({ PATH: '/bin', SLUICE_DATA_DIR: '/d', MALLOC_ARENA_MAX: '2' })
    expect(MALLOC_ARENA_MAX).toBe('2')
  })

  it("keeps an operator's own value", () => {
    expect(withProcessMemorySettings({ MALLOC_ARENA_MAX: '8' }).MALLOC_ARENA_MAX).toBe('8')
  })

  it('warns on Linux only, and only when the setting is missing', () => {
    expect(processMemoryWarning(undefined, 'linux')).toMatch(
      /^MALLOC_ARENA_MAX is not set: .*MALLOC_ARENA_MAX=2/,
    )
    expect(processMemoryWarning('2', 'linux')).toBeUndefined()
    expect(processMemoryWarning('16', 'linux')).toBeUndefined()
    expect(processMemoryWarning(undefined, 'darwin')).toBeUndefined()
  })
})
