import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { HttpClient } from '../../bench/http.ts'
import { Progress } from '../../bench/progress.ts'
import {
  buildFigures,
  compareReport,
  formatFigure,
  markdownReport,
  type BenchResults,
} from '../../bench/report.ts'
import type { BenchContext } from '../../bench/scenarios/context.ts'
import { profiles } from '../../bench/scenarios/profiles.ts'

const latency = { count: 10, p50: 5, p90: 9, p99: 12, max: 13, min: 1, mean: 6 }
const cpu = { sluice: 1, bench: 0.2, other: 0.3, busyShare: 0.8 }

function results(over: Partial<BenchResults['scenarios']> = {}): BenchResults {
  const r: Omit<BenchResults, 'figures'> = {
    version: 1,
    run: {
      id: 'x',
      startedAt: '2026-01-01T00:00:00Z',
      mode: 'embedded',
      profile: 'quick',
      seed: 1,
      git: { commit: 'abc', dirty: false },
      machine: { cores: 2 },
      settings: {},
      notes: [],
    },
    baselines: {
      bare: [
        {
          kind: 'plain',
          requests: 1,
          bytes: 1,
          elapsedMs: 1,
          bytesPerSecond: 100e6,
          requestsPerSecond: 1,
          eventsPerSecond: 1,
          errors: 0,
          latencyMs: latency,
        },
        {
          kind: 'gzip',
          requests: 1,
          bytes: 1,
          elapsedMs: 1,
          bytesPerSecond: 200e6,
          requestsPerSecond: 1,
          eventsPerSecond: 1,
          errors: 0,
          latencyMs: latency,
        },
        {
          kind: 'gzip+inflate',
          requests: 1,
          bytes: 1,
          elapsedMs: 1,
          bytesPerSecond: 10e6,
          requestsPerSecond: 1,
          eventsPerSecond: 1,
          errors: 0,
          latencyMs: latency,
        },
      ],
      chdb: [
        {
          kind: 'plain',
          rows: 1,
          bytes: 1,
          inserts: 1,
          elapsedMs: 1,
          rowsPerSecond: 10_000,
          insertMs: latency,
        },
        {
          kind: 'gzip',
          rows: 1,
          bytes: 1,
          inserts: 1,
          elapsedMs: 1,
          rowsPerSecond: 50_000,
          insertMs: latency,
        },
      ],
    },
    scenarios: {
      edge: [
        {
          name: 'edge-plain',
          kind: 'plain',
          concurrency: 16,
          sendMs: 1000,
          requests: 1,
          statuses: { 202: 1 },
          acceptedBodies: 1,
          acceptedBytes: 1,
          acceptedBytesPerSecond: 95e6,
          acceptedEventsPerSecond: 1,
          acceptedLatencyMs: latency,
          timeline: { accepted: [], refused: [] },
          cpu,
        },
        {
          name: 'edge-gzip',
          kind: 'gzip',
          concurrency: 16,
          sendMs: 1000,
          requests: 1,
          statuses: { 202: 1 },
          acceptedBodies: 1,
          acceptedBytes: 1,
          acceptedBytesPerSecond: 164e6,
          acceptedEventsPerSecond: 1,
          acceptedLatencyMs: latency,
          timeline: { accepted: [], refused: [] },
          cpu,
        },
      ],
      e2e: [],
      freshness: {
        name: 'freshness',
        app: 'a',
        targetBodiesPerSecond: 1,
        targetEventsPerSecond: 1,
        sendMs: 1,
        sent: 1,
        skipped: 0,
        statuses: {},
        acceptedEventsPerSecond: 1,
        samples: 10,
        timedOut: 0,
        freshnessMs: { ...latency, p50: 300.4, p99: 2500.6 },
        polls: 100,
        receiptReadMs: latency,
        freshnessPoints: [],
        cpu,
      },
      profiles: { name: 'profiles', skipped: 'profile API not available (404)' },
      ...over,
    },
    durations: {},
    rss: [],
    errors: [],
  }
  return { ...r, figures: buildFigures(r) }
}

describe('bench report', () => {
  it('prints one line per figure with its target and whether it is met', () => {
    const lines = results().figures.map(formatFigure)
    expect(lines).toEqual([
      'edge_ratio 0.82 (target >= 0.8: met; plain 0.95, gzip 0.82 (ceiling of an edge that inflates: 0.05))',
      'e2e_ratio skipped: not measured',
      'freshness_p50_ms 300 (no target; 10 samples)',
      'freshness_p99_ms 2501 (target <= 2000: not met; 10 samples)',
      'profile_patch_per_s skipped: profile API not available (404)',
      'profile_read_your_writes_p99_ms skipped: profile API not available (404)',
      'rss_max_mb skipped: not measured',
    ])
  })

  it('counts an overload with lost events as not met whatever the RSS', () => {
    const base = {
      name: 'overload' as const,
      app: 'a',
      targetBodiesPerSecond: 1,
      targetEventsPerSecond: 1,
      sendMs: 1,
      sent: 10,
      skipped: 0,
      statuses: { 202: 6, 503: 4 },
      shedShare: 0.4,
      latencyMs: latency,
      acceptedBodies: 6,
      acceptedEventsPerSecond: 1,
      acceptedEvents: 1500,
      drainComplete: true,
      drainMs: 1,
      stored: 1500,
      lost: 0,
      storedTwice: 0,
      storedNotAcknowledged: 0,
      rssMaxMb: 612.3,
      rssHwmMb: 700,
      rssAnonMaxMb: 400,
      rssFileMaxMb: 200,
      timeline: { accepted: [], shed: [], queryable: [] },
      cpu,
    }
    const ok = results({ overload: base }).figures.find((f) => f.name === 'rss_max_mb')!
    expect(formatFigure(ok)).toBe(
      'rss_max_mb 612 (target <= 1024 with 0 lost: met; anonymous 400 MB + file-backed 200 MB at most; 429/503 40.0% of answers; lost 0 of 1500 accepted events)',
    )
    const lost = results({ overload: { ...base, lost: 3 } }).figures.find((f) => f.name === 'rss_max_mb')!
    expect(formatFigure(lost)).toMatch(
      /^rss_max_mb 612 \(target <= 1024 with 0 lost: not met; .*lost 3 of 1500/,
    )
  })

  it('writes a Markdown table and compares two runs side by side', () => {
    const a = results()
    const b = results()
    b.baselines.bare[0]!.bytesPerSecond = 50e6
    const md = markdownReport(a)
    expect(md).toContain(
      '| `edge_ratio` | 0.82 (plain 0.95, gzip 0.82 (ceiling of an edge that inflates: 0.05)) | >= 0.8 | met |',
    )
    const table = compareReport(a, b, ['A', 'B'])
    expect(table).toMatch(/baseline bare plain MB\/s\s+95\s+48\s+-50\.0%/)
    expect(table).toMatch(/^edge_ratio\s+0\.82\s+0\.82\s+\+0\.0%$/m)
  })

  it('reports the profile scenario as skipped when the profile API answers 404', async () => {
    const server = http.createServer((_, res) => {
      res.writeHead(404, { 'Content-Type': 'application/json' })
      res.end('{"error":"not found"}')
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const client = new HttpClient(`http://127.0.0.1:${(server.address() as AddressInfo).port}`, 2)
    try {
      const ctx = {
        sut: { http: client, url: client.base.href },
        tenant: { auth: 'Basic eDp5' },
        progress: new Progress(),
        budgetEnd: Infinity,
      } as unknown as BenchContext
      const r = await profiles(ctx, { bodies: [], durationMs: 100, concurrency: 1, customers: 1 })
      expect(r).toEqual({ name: 'profiles', skipped: 'profile API not available (404)' })
    } finally {
      client.close()
      server.close()
    }
  })
})
