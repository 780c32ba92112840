import { describe, expect, it } from 'vitest'
import { classifyFailure, describeFailure } from '../../pipelines/failures/classify-error.ts'
import { PermanentError } from '../../pipelines/failures/outcome.ts'
import { backoffDelay, retry, type RetryClock, type RetryPolicy } from '../../pipelines/failures/retry.ts'
import { SluiceError } from '../../services/shared/errors.ts'

/** A clock that moves only when the helper sleeps (plus `work` ms per attempt): no real waiting. */
function fakeClock(random: () => number = () => 0.5, work = 0) {
  let now = 1_000_000
  const sleeps: number[] = []
  const clock: RetryClock = {
    now: () => now,
    sleep: async (ms) => {
      sleeps.push(ms)
      now += ms
    },
    random,
  }
  return { clock, sleeps, spend: () => (now += work) }
}

const policy: RetryPolicy = { attempts: 5, deadlineMs: 60_000, baseDelayMs: 100, maxDelayMs: 1_000 }
const failing = (spend: () => void, message = 'boom') => {
  let calls = 0
  const fn = async (attempt: number) => {
    calls++
    spend()
    throw new Error(`${message} ${attempt}`)
  }
  return { fn, calls: () => calls }
}

describe('retry', () => {
  it('returns the value of the first success, counting attempts', async () => {
    const { clock, sleeps } = fakeClock()
    let calls = 0
    const result = await retry(
      async () => {
        if (++calls < 3) throw new Error('not yet')
        return 'done'
      },
      policy,
      { clock },
    )
    expect(result).toEqual({ ok: true, value: 'done', attempts: 3 })
    expect(sleeps).toEqual([50, 100])
  })

  it('stops after the attempt limit and returns the last error', async () => {
    const { clock, sleeps, spend } = fakeClock()
    const f = failing(spend)
    const result = await retry(f.fn, policy, { clock })
    expect(result).toMatchObject({ ok: false, attempts: 5, stoppedBy: 'attempts' })
    expect(result.ok ? undefined : (result.error as Error).message).toBe('boom 5')
    expect(f.calls()).toBe(5)
    // Caps 100, 200, 400, 800 (max 1,000), each halved by random() = 0.5.
    expect(sleeps).toEqual([50, 100, 200, 400])
  })

  it('stops before a wait that would cross the deadline', async () => {
    // Each attempt takes 400 ms of the clock; waits are the full cap (random just under 1).
    const { clock, sleeps, spend } = fakeClock(() => 0.999, 400)
    const f = failing(spend)
    const result = await retry(f.fn, { ...policy, attempts: 100, deadlineMs: 2_000 }, { clock })
    // t=400 fail, wait 99 -> t=499; t=899 fail, wait 199 -> 1098; t=1498 fail, wait 399 would end at 1897 < 2000 -> 1897;
    // t=2297 fail: past the deadline.
    expect(result).toMatchObject({ ok: false, attempts: 4, stoppedBy: 'deadline' })
    expect(sleeps).toEqual([99, 199, 399])
  })

  it('gives up at once when shouldRetry says so (a permanent error)', async () => {
    const { clock, sleeps, spend } = fakeClock()
    const f = failing(spend)
    const result = await retry(f.fn, policy, { clock, shouldRetry: () => false })
    expect(result).toMatchObject({ ok: false, attempts: 1, stoppedBy: 'give-up' })
    expect(sleeps).toEqual([])
  })

  it('reports each retry with the wait it chose', async () => {
    const { clock, spend } = fakeClock(() => 0.25)
    const seen: [string, number, number][] = []
    await retry(
      failing(spend).fn,
      { ...policy, attempts: 3 },
      {
        clock,
        onRetry: (err, attempt, delay) => seen.push([(err as Error).message, attempt, delay]),
      },
    )
    expect(seen).toEqual([
      ['boom 1', 1, 25],
      ['boom 2', 2, 50],
    ])
  })

  it('full jitter: every wait lies in [0, min(max, base * 2^(n-1))), whatever random() returns', () => {
    const caps = [100, 200, 400, 800, 1000, 1000, 1000]
    for (let n = 1; n <= caps.length; n++) {
      expect(backoffDelay(n, policy, () => 0)).toBe(0)
      expect(backoffDelay(n, policy, () => 0.999999)).toBe(caps[n - 1]! - 1)
      for (const r of [0.1, 0.37, 0.5, 0.93]) {
        const delay = backoffDelay(n, policy, () => r)
        expect(delay).toBeGreaterThanOrEqual(0)
        expect(delay).toBeLessThan(caps[n - 1]!)
        expect(delay).toBe(Math.floor(r * caps[n - 1]!))
      }
    }
    // Huge retry numbers do not overflow past the cap.
    expect(backoffDelay(5000, policy, () => 0.5)).toBe(500)
  })
})

describe('classifyFailure', () => {
  it.each([
    ['a PermanentError', new PermanentError('undecodable'), 'permanent'],
    [
      'a chdb parse error (code 27)',
      new Error("Code: 27. DB::Exception: Cannot parse input: expected '\"'"),
      'permanent',
    ],
    [
      'a lone surrogate refused (code 25)',
      new Error('Code: 25. DB::Exception: Cannot parse escape'),
      'permanent',
    ],
    ['a ClickHouseError code 53', Object.assign(new Error('Type mismatch'), { code: '53' }), 'permanent'],
    ['too many parts (code 252)', new Error('Code: 252. DB::Exception: Too many parts'), 'outage'],
    ['a refused connection', Object.assign(new Error('connect'), { code: 'ECONNREFUSED' }), 'outage'],
    [
      'a retriable SluiceError',
      new SluiceError('bus_unavailable', 503, 'down', { retriable: true }),
      'outage',
    ],
    ['a kafkajs retriable error', Object.assign(new Error('leader'), { retriable: true }), 'outage'],
    [
      'a full lmdb map (the local log)',
      new Error('MDB_MAP_FULL: Environment mapsize limit reached'),
      'outage',
    ],
    ['a closed local log', new Error('local log is closed'), 'outage'],
    ['a ClickHouse request timeout', new Error('Timeout error.'), 'outage'],
    [
      'a Kafka protocol error (numeric code 6, not ClickHouse 6)',
      Object.assign(new Error('x'), { code: 6 }),
      'unknown',
    ],
    ['a plain error', new Error('Maximum call stack size exceeded'), 'unknown'],
    ['a constraint violation (code 469)', new Error('Code: 469. DB::Exception: Constraint'), 'unknown'],
    [
      'a full disk (code 243)',
      new Error('Code: 243. DB::Exception: Cannot reserve 1.00 MiB, not enough space. (NOT_ENOUGH_SPACE)'),
      'outage',
    ],
    ['a thrown string', 'oops', 'unknown'],
  ])('%s is %s', (_name, error, kind) => {
    expect(classifyFailure(error)).toBe(kind)
  })

  it('looks through causes: a permanent cause wins, an outage cause counts', () => {
    const outage = Object.assign(new Error('reset'), { code: 'ECONNRESET' })
    expect(classifyFailure(new Error('insert failed', { cause: outage }))).toBe('outage')
    const parse = new Error('Code: 26. DB::Exception: Cannot parse quoted string')
    expect(classifyFailure(new Error('wrapped', { cause: parse }))).toBe('permanent')
  })
})

describe('describeFailure', () => {
  it('names the error and its causes on one line, valid UTF-8, cut to a limit', () => {
    const err = new Error('insert failed', { cause: new RangeError('bad \ud800 byte') })
    expect(describeFailure(err)).toBe('Error: insert failed; caused by RangeError: bad \ufffd byte')
    expect(describeFailure(new Error('x'.repeat(100)), 20)).toBe('Error: xxxxxxxxxxxxx')
    expect(describeFailure('plain')).toBe('plain')
  })
})

describe('describeFailure of a ClickHouse server error', () => {
  it('names the class and the code the client keeps beside the message', () => {
    class ClickHouseError extends Error {
      readonly code = '469'
      readonly type = 'VIOLATED_CONSTRAINT'
    }
    expect(describeFailure(new ClickHouseError('Constraint `c` is violated'))).toBe(
      'ClickHouseError: Code: 469 (VIOLATED_CONSTRAINT). Constraint `c` is violated',
    )
  })
})
