import { describe, expect, it } from 'vitest'
import { groupRetry } from '../../pipelines/connectors/bus/kafka/group-consumer.ts'

/** kafkajs' pauses between retries without their ±20 % jitter: doubling from the first, capped. */
function pauses(retry: ReturnType<typeof groupRetry>): number[] {
  const out: number[] = []
  for (let i = 0, t = retry.initialRetryTime; i < retry.retries; i++, t = Math.min(t * 2, retry.maxRetryTime))
    out.push(t)
  return out
}

describe("a group member's rejoin budget", () => {
  it.each([
    { sessionTimeoutMs: 6_000, rebalanceTimeoutMs: 60_000, heartbeatIntervalMs: 600 },
    { sessionTimeoutMs: 30_000, rebalanceTimeoutMs: 60_000, heartbeatIntervalMs: 3_000 },
  ])(
    'outlasts the longest rebalance and never sits out a round ($sessionTimeoutMs ms session)',
    (settings) => {
      const retry = groupRetry(settings)
      const waits = pauses(retry)
      // Pauses alone (each attempt's own wait on the coordinator comes on top) span a broker's wait
      // for members to rejoin plus a dead member's session.
      expect(waits.reduce((a, b) => a + b, 0)).toBeGreaterThanOrEqual(
        settings.rebalanceTimeoutMs + settings.sessionTimeoutMs,
      )
      // No pause (with +20 % jitter) as long as librdkafka's mock holds a round open for late members.
      expect(Math.max(...waits) * 1.2).toBeLessThan(settings.sessionTimeoutMs - 1_000)
      expect(Math.max(...waits)).toBeLessThanOrEqual(Math.min(1_000, settings.heartbeatIntervalMs))
    },
  )

  it("is far more than kafkajs' default of 5 retries within a few seconds", () => {
    const retry = groupRetry({
      sessionTimeoutMs: 6_000,
      rebalanceTimeoutMs: 60_000,
      heartbeatIntervalMs: 600,
    })
    expect(retry).toEqual({ initialRetryTime: 250, maxRetryTime: 600, retries: 111 })
  })
})
