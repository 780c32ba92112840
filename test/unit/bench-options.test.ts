import { describe, expect, it } from 'vitest'
import { parseOptions } from '../../bench/options.ts'

const skipOf = (argv: string[]) => {
  const command = parseOptions(argv)
  return command.kind === 'run' ? [...command.options.skip] : command
}

describe('bench --skip', () => {
  it('takes the step lists the bench README gives', () => {
    for (const list of [
      'segmentation,push,campaigns,exports,sdk,plain,gzip,freshness,profiles,overload,sustained',
      'segmentation,push,campaigns,exports,baselines,edge,plain,gzip,freshness,profiles,overload',
      // The dashboard alone.
      'segmentation,query,push,campaigns,exports,imports,baselines,edge,sdk,plain,gzip,freshness,profiles,overload,sustained,storage',
    ])
      expect(skipOf(['--quick', '--skip', list])).toEqual(list.split(','))
    expect(skipOf(['--skip', ' edge , baselines '])).toEqual(['edge', 'baselines'])
  })

  it('refuses a step it does not have, naming it and the steps there are', () => {
    const command = parseOptions(['--skip', 'edge,sustain'])
    expect(command.kind).toBe('invalid')
    expect(command.kind === 'invalid' && command.message).toMatch(
      /no step sustain; steps: segmentation,query,push,campaigns,exports,imports,dashboard,baselines,.*,sustained,storage$/m,
    )
  })

  it('refuses to skip the SDK sessions while a scenario whose events need their devices runs', () => {
    // Without the devices every event is rejected and these scenarios waited for stored events forever.
    const command = parseOptions([
      '--skip',
      'segmentation,push,campaigns,exports,baselines,edge,sdk,plain,gzip,freshness,profiles,overload',
    ])
    expect(command).toEqual({
      kind: 'invalid',
      message: expect.stringMatching(/^--skip sdk: sustained need the devices/),
    })
    const all = parseOptions(['--skip', 'sdk'])
    expect(all.kind === 'invalid' && all.message).toMatch(/plain, gzip, freshness, overload, sustained/)
  })
})

describe('bench profiles', () => {
  const profileOf = (argv: string[]) => {
    const command = parseOptions(argv)
    if (command.kind !== 'run') throw new Error(command.kind)
    return command.options.profile
  }

  it('scale --quick --distributed to the stand-ins, keeping the edge bursts as the floor runs them', () => {
    const embedded = profileOf(['--quick'])
    const distributed = profileOf(['--quick', '--distributed'])
    expect(distributed.name).toBe('quick')
    expect(embedded.e2eConcurrency).toBe(16)
    expect(distributed).toMatchObject({ customers: 500, e2eConcurrency: 2, window: 5_000, windowBodies: 1 })
    expect(distributed.concurrency).toBe(embedded.concurrency)
    expect(distributed.edgeMs).toBe(embedded.edgeMs)
    expect(profileOf(['--distributed']).name).toBe('full')
    expect(profileOf(['--distributed']).e2eConcurrency).toBe(16)
  })
})
