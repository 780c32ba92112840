import http from 'node:http'
import type { AddressInfo } from 'node:net'
import { describe, expect, it } from 'vitest'
import { HttpClient } from '../../bench/http.ts'
import { breakDown } from '../../bench/freshness-stages.ts'
import { Progress } from '../../bench/progress.ts'
import {
  buildFigures,
  compareReport,
  formatFigure,
  markdownReport,
  notStored,
  type BenchResults,
} from '../../bench/report.ts'
import type { ScenarioReporter } from '../../bench/figures.ts'
import { REPORTERS } from '../../bench/reporters.ts'
import type { BenchContext } from '../../bench/scenarios/context.ts'
import { dashboardFigures } from '../../bench/scenarios/dashboard.ts'
import { profiles } from '../../bench/scenarios/profiles.ts'
import { queryFigures, type QueryResult } from '../../bench/scenarios/query.ts'
import { segmentationFigures, type SegmentationResult } from '../../bench/scenarios/segmentation.ts'

const latency = { count: 10, p50: 5, p90: 9, p99: 12, max: 13, min: 1, mean: 6 }
const cpu = { sluice: 1, bench: 0.2, other: 0.3, busyShare: 0.8 }

const server = (kind: string, bytesPerSecond: number, kindOfServer: 'bare' | 'floor' = 'bare') => ({
  kind,
  server: kindOfServer,
  requests: 1,
  bytes: 1,
  elapsedMs: 1,
  bytesPerSecond,
  requestsPerSecond: 1,
  eventsPerSecond: 1,
  errors: 0,
  latencyMs: latency,
})

const insert = (kind: string, format: string, rowsPerSecond: number) => ({
  kind,
  format,
  rows: 1,
  bytes: 1,
  inserts: 1,
  elapsedMs: 1,
  rowsPerSecond,
  insertMs: latency,
})

const e2eGzip = {
  name: 'e2e-gzip',
  kind: 'gzip' as const,
  app: 'a',
  concurrency: 16,
  window: 1,
  startedAtS: 0,
  sendMs: 10_000,
  exhausted: false,
  requests: 1,
  statuses: { 202: 1 },
  acceptedBodies: 1,
  acceptedBytes: 1,
  acceptedLines: 1,
  expectedStored: 600_000,
  acceptedEventsPerSecond: 1,
  acceptedLatencyMs: latency,
  stored: 600_000,
  drainComplete: true,
  queryableAfterS: 10,
  queryableEventsPerSecond: 60_000,
  timeline: { accepted: [], refused: [], queryable: [] },
  cpu,
  // 600,000 events: 5 + 7 + 15 + 1 = 28 us each
  threads: { main: 3, cpu_pool: 4.2, engine: 9, node: 0.6 },
}

function segmentationResult(
  over: Partial<Extract<SegmentationResult, { set: string }>> = {},
): SegmentationResult {
  return {
    name: 'segmentation',
    set: '100k',
    installs: 100_000,
    events: 2_000_000,
    sessions: 300_000,
    rows: { devices: 100_000, events: 2_000_000 },
    reused: true,
    generationMs: 1,
    dataDir: '/cache',
    compiledMs: { ...latency, p50: 420.2, p99: 899.9 },
    handWrittenMs: { ...latency, p50: 400, p99: 800 },
    ratio: 400 / 420.2,
    counts: {
      compiled: { user_count: 5, has_push: 3, seen_last_thirty: 4 },
      hand: { user_count: 5, has_push: 3, seen_last_thirty: 4 },
    },
    countsMatch: true,
    ...over,
  }
}

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
      bare: [server('plain', 400e6), server('gzip', 800e6)],
      // The floor: 200 MB per CPU second on gzip bodies.
      floor: [
        server('plain', 100e6, 'floor'),
        { ...server('gzip', 200e6, 'floor'), bytes: 400e6, cpuSeconds: 2 },
      ],
      chdb: [
        insert('plain', 'JSONEachRow', 10_000),
        insert('plain', 'RowBinary', 20_000),
        insert('plain', 'Native', 25_000),
        // The engine: 14 us of CPU per row.
        { ...insert('gzip', 'JSONEachRow', 50_000), rows: 100_000, cpuSeconds: 1.4 },
        insert('gzip', 'RowBinary', 80_000),
        insert('gzip', 'Native', 100_000),
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
          // 164 MB in 1 s on 1 core: 0.82 of the floor's bytes per CPU second
          acceptedBytes: 164e6,
          acceptedBytesPerSecond: 164e6,
          acceptedEventsPerSecond: 1,
          acceptedLatencyMs: latency,
          timeline: { accepted: [], refused: [] },
          cpu,
        },
      ],
      e2e: [e2eGzip],
      freshness: {
        name: 'freshness',
        app: 'a',
        loadShare: 0.8,
        targetBodiesPerSecond: 1,
        targetEventsPerSecond: 1,
        sendMs: 1,
        sent: 1,
        skipped: 0,
        statuses: {},
        acceptedEventsPerSecond: 1,
        samples: 10,
        timedOut: 0,
        freshnessMs: { ...latency, p50: 300.4, p90: 900, p99: 2500.6, max: 3100 },
        stages: breakDown([
          { accepted: 0, consumed: 100, parsed: 110, processed: 130, written: 330, recorded: 350, seen: 400 },
          {
            accepted: 0,
            consumed: 900,
            parsed: 910,
            processed: 930,
            written: 2930,
            recorded: 2950,
            seen: 3000,
          },
        ]),
        polls: 100,
        receiptReadMs: latency,
        freshnessPoints: [],
        cpu,
      },
      profiles: { name: 'profiles', skipped: 'profile API not available (404)' },
      segmentation: segmentationResult(),
      push: {
        name: 'push',
        installs: 100_000,
        recorded: 100_000,
        complete: true,
        deviceGenerationMs: 200,
        acceptMs: 40,
        timeToFirstDeliveryMs: 85,
        fanOutMs: 5000,
        deliveriesPerSecond: 20_000,
        bareLinesPerSecond: 100_000,
        ratio: 0.2,
        cpuUsPerDelivery: 95.5,
        fileBytes: 68_000_000,
        rssMaxMb: 620,
        rssMb: [500, 620],
        edgeMs: { ...latency, p50: 6, p99: 41 },
      },
      campaigns: {
        name: 'campaigns',
        set: '100k',
        installs: 100_000,
        broadcastMs: 20_000,
        broadcastPerSecond: 5000,
        campaignPushes: 90_000,
        heldOut: 10_000,
        campaignMs: 25_000,
        campaignPlanMs: 4000,
        campaignPlannedBeforeStartMs: 11_000,
        campaignFirstPushMs: 640,
        campaignDispatchedMs: 20,
        campaignFirstBatchPlannedMs: 90,
        campaignFirstAttemptMs: 120,
        campaignPerSecond: 3600,
        ratio: 0.72,
      },
      exports: {
        name: 'exports',
        set: '200k',
        rows: 200_000,
        reused: true,
        log: {
          sluice: {
            ms: 2000,
            rows: 200_000,
            bytes: 16 * 1048576,
            rssGrowthMb: 120.5,
            jsGrowthMb: 40,
            engineGrowthMb: 70,
          },
          baseline: { ms: 1800, rows: 200_000, rssGrowthMb: 80, engineGrowthMb: 45.5 },
        },
        audience: {
          sluice: {
            ms: 1000,
            rows: 190_000,
            bytes: 4 * 1048576,
            rssGrowthMb: 90,
            jsGrowthMb: 5,
            engineGrowthMb: 60,
          },
          baseline: { ms: 1000, rows: 200_000, rssGrowthMb: 85, engineGrowthMb: 50 },
        },
      },
      imports: {
        name: 'imports',
        set: '100k',
        rows: 100_000,
        bodyBytes: 5 * 1048576,
        ms: 50_000,
        applied: 100_000,
        rejected: 0,
        stored: 100_000,
        sampled: 100,
        sampleMatched: 99,
        cpuMs: 100_000,
        rssGrowthMb: 120,
        engine: {
          trackedGrowthMb: 70,
          mergesMb: 12,
          mergeTable: 'profiles',
          queryMb: 64,
          query: 'INSERT INTO profiles',
          jemallocResidentGrowthMb: 100,
          jemallocRetainedGrowthMb: 150,
          cachesMb: 0.2,
        },
        baseline: { ms: 2000, cpuMs: 3000, rows: 100_000 },
        audience: {
          members: 100_000,
          ms: 12_345,
          known: 1000,
          unknown: 99_000,
          userCount: 1000,
          rssGrowthMb: 30,
          engine: {
            trackedGrowthMb: 12,
            mergesMb: 3,
            mergeTable: 'audience_list_members',
            queryMb: 10,
            query: 'INSERT INTO audience_list_members',
            jemallocResidentGrowthMb: 20,
            jemallocRetainedGrowthMb: 25,
            cachesMb: 0.1,
          },
        },
      },
      dashboard: {
        name: 'dashboard',
        runs: 5,
        chromium: '140.0.7339.185',
        loadAverage: [12.3, 14.1],
        rows: 120,
        pages: [
          {
            page: 'sign_in',
            path: '/dashboard/sign-in',
            loadMs: { ...latency, count: 5, min: 180.2, p50: 212.4, max: 260 },
            firstByteMs: { ...latency, count: 5, p50: 8.2 },
            jsBytes: 17_300,
            scripts: 1,
          },
          {
            page: 'analytics',
            path: '/dashboard/analytics?org=1&app=a',
            loadMs: { ...latency, count: 5, min: 905, p50: 1180.6, max: 1400 },
            firstByteMs: { ...latency, count: 5, p50: 840 },
            jsBytes: 41_000,
            scripts: 3,
          },
        ],
      },
      ...over,
    },
    durations: {},
    rss: [],
    errors: [],
  }
  return { ...r, figures: buildFigures(r, REPORTERS) }
}

describe('bench report', () => {
  it('prints one line per figure with its target and whether it is met', () => {
    const lines = results().figures.map(formatFigure)
    expect(lines).toEqual([
      "edge_ratio 0.82 (target >= 0.8: met; plain 0.95, gzip 0.82; bytes per CPU second against the floor's: gzip 0.82; against a bare server that keeps no promise: plain 0.24, gzip 0.21)",
      "e2e_ratio 1.2 (target >= 1: met; events per CPU second against the engine's rows per CPU second: gzip 0.5)",
      'e2e_floor_ratio 0.6 (no target; gzip 0.6 (Native))',
      'cpu_us_per_event 28 (no target; gzip 28.0: main 5.0, cpu pool 7.0, engine 15.0, node 1.0)',
      'profile_patch_per_s skipped: profile API not available (404)',
      'profile_read_your_writes_p99_ms skipped: profile API not available (404)',
      'rss_max_mb skipped: not measured',
      'sustained_rate_ratio skipped: full run only',
      // Freshness hands its figures through its reporter (the first in REPORTERS).
      'freshness_p50_ms 300 (no target; 10 samples at 80 % of the max sustained rate)',
      'freshness_p99_ms 2501 (target <= 1000: not met; 10 samples at 80 % of the max sustained rate; p90 900, max 3,100 ms; ' +
        'p50/p99 ms by stage: log 100/900, parse 10/10, group 20/20, write 200/2000, batch 20/20, receipt 50/50; the slowest 10 % spend most more in write (1100 → 2000 ms))',
      "segmentation_100k_p50_ms 420 (no target; 100,000 installs, 2,000,000 events, 10 runs; the 1,000 ms target is the 1M-install set's)",
      'segmentation_100k_p99_ms 900 (no target; hand-written p50 400 ms, p99 800 ms)',
      'segmentation_100k_ratio 0.95 (target >= 0.8: met; hand-written p50 ÷ compiled p50; both count {"user_count":5,"has_push":3,"seen_last_thirty":4})',
      // The query scenario did not run in these results: its figures say so, one by one.
      'query_1m_users_by_day_p50_ms skipped: not measured',
      'query_1m_users_by_day_p99_ms skipped: not measured',
      'query_1m_users_by_day_ratio skipped: not measured',
      'query_1m_occurrences_by_event_p50_ms skipped: not measured',
      'query_1m_occurrences_by_event_p99_ms skipped: not measured',
      'query_1m_occurrences_by_event_ratio skipped: not measured',
      'query_1m_sessions_by_week_p50_ms skipped: not measured',
      'query_1m_sessions_by_week_p99_ms skipped: not measured',
      'query_1m_sessions_by_week_ratio skipped: not measured',
      'query_1m_attribute_not_in_p50_ms skipped: not measured',
      'query_1m_attribute_not_in_p99_ms skipped: not measured',
      'query_1m_attribute_not_in_ratio skipped: not measured',
      'query_1m_in_groups_p50_ms skipped: not measured',
      'query_1m_in_groups_p99_ms skipped: not measured',
      'query_1m_in_groups_ratio skipped: not measured',
      'query_1m_metric_condition_p50_ms skipped: not measured',
      'query_1m_metric_condition_p99_ms skipped: not measured',
      'query_1m_metric_condition_ratio skipped: not measured',
      'query_1m_mismatches skipped: not measured',
      'query_1m_rollup_upkeep_pct skipped: not measured',
      'query_1m_rollup_upkeep_e2e_pct skipped: not measured',
      'push_deliveries_per_s 20000 (no target; 100,000 of 100,000 installs recorded 5.0 s after the 202, through the file transport)',
      'push_ratio 0.2 (target >= 0.5: not met; against the same lines through a bare Node write stream, 100000 lines/s)',
      'push_cpu_us_per_delivery 95.5 (no target; CPU time of the engine process (every thread) from the 202 to the last record, per delivery)',
      'push_first_delivery_ms 85 (no target; from the 202 to the first line in the file)',
      'push_rss_max_mb 620 (no target; the embedded process during the fan-out)',
      'push_edge_p99_ms 41 (no target; GET /v1/auth/check during the fan-out, p50 6 ms (10 samples))',
      'campaign_100k_ms 25000 (no target; scheduled moment to the last of 90,000 pushes sent (3600/s; 10,000 held out; planned in 4000 ms, 11000 ms before the scheduled moment))',
      'campaign_100k_first_push_ms 640 (target <= 1000: met; scheduled moment to the first push sent (slot dispatched +20 ms, first batch planned +90 ms, attempted +120 ms; planned in 4000 ms, 11000 ms before the scheduled moment))',
      'campaign_100k_vs_broadcast 0.72 (target >= 0.8: not met; campaign 3600 pushes/s ÷ broadcast 5000 pushes/s (100,000 in 20000 ms))',
      'export_log_200k_rows_per_s 100000 (no target; 200,000 rows in 2.0 s, 16 MB gzip)',
      "export_log_200k_ratio 0.9 (target >= 0.8: met; Sluice's rows/s ÷ the engine's own JSONEachRow through gzip (111111 rows/s))",
      "export_log_200k_rss_growth_mb 120.5 (target <= 100: not met; whole process, the embedded engine included (its tracked memory +70 MB); Node's heap and buffers +40 MB (uncollected garbage included); the baseline, measured alike, grew the process by 80 MB (engine +45.5 MB))",
      // A file short of rows fails its ratio, however fast.
      'export_audience_200k_rows_per_s 190000 (no target; 190,000 rows in 1.0 s, 4 MB gzip (EXPECTED 200000))',
      "export_audience_200k_ratio 0.95 (target >= 0.8: not met; Sluice's rows/s ÷ the engine's own JSONEachRow through gzip (200000 rows/s))",
      "export_audience_200k_rss_growth_mb 90 (target <= 100: met; whole process, the embedded engine included (its tracked memory +60 MB); Node's heap and buffers +5 MB (uncollected garbage included); the baseline, measured alike, grew the process by 85 MB (engine +50 MB))",
      // A sampled profile read back unlike what was sent fails the ratio, however fast.
      'import_100k_rows_per_s 2000 (no target; 100,000 profiles of 20 attributes (5 MB gzip CSV) readable 50.0 s after the POST; 100000 stored, 99/100 sampled GETs as sent (INCOMPLETE))',
      "import_100k_ratio 0.04 (target >= 0.8: not met; Sluice's rows/s ÷ the engine reading the same file into profiles (50000 rows/s))",
      "import_100k_cpu_ratio 0.03 (no target; CPU time per row, the engine's own insert ÷ Sluice's (30 ÷ 1000 µs): the rate ratio's cost side, which the load of a shared machine moves far less than wall time)",
      'import_100k_rss_growth_mb 120 (target <= 150: met; the Sluice process (the embedded engine included), largest sample minus the first, during the import; engine: tracked +70 MB, merges up to 12 MB (profiles), queries up to 64 MB (largest: INSERT INTO profiles), jemalloc resident +100 / retained +150 MB, caches 0.2 MB)',
      'import_audience_100k_s 12.3 (no target; 100,000 customer ids: receipt 1000 known / 99000 unknown, user_count 1000 exact; RSS +30 MB (engine: tracked +12 MB, merges up to 3 MB (audience_list_members), queries up to 10 MB (largest: INSERT INTO audience_list_members), jemalloc resident +20 / retained +25 MB, caches 0.1 MB))',
      // Each page's median first load against 1 s; the slowest and the heaviest page as ratios of their targets.
      'dashboard_sign_in_load_ms 212 (target <= 1000: met; median of 5 first loads (min 180, max 260 ms); first byte 8 ms; 16.9 KB of JS gzipped (1 script))',
      'dashboard_analytics_load_ms 1181 (target <= 1000: not met; median of 5 first loads (min 905, max 1400 ms); first byte 840 ms; 40 KB of JS gzipped (3 scripts))',
      "dashboard_load_ratio 1.18 (target <= 1: not met; the slowest page's median first load ÷ 1,000 ms: analytics 1181 ms; Chromium 140.0.7339.185, loopback, load average 12.3 → 14.1)",
      "dashboard_js_ratio 0.16 (target <= 1: met; the heaviest page's scripts, gzipped as served, ÷ 250 KB: analytics 40 KB (the lightest 16.9 KB))",
      'bytes_per_event_on_disk skipped: not measured',
      'dead_letters skipped: not measured',
    ])
  })

  it('splits CPU per event by process in distributed mode, and gives the bytes per stored event', () => {
    // 600,000 events: edge 6 s, worker 12 s, stand-in 9 s, scheduler 0.3 s.
    const distributed = { ...e2eGzip, roles: { edge: 6, worker: 12, engine: 9, scheduler: 0.3 } }
    const storage = {
      optimized: true,
      events: { rows: 200_000, bytesOnDisk: 8_000_000, uncompressedBytes: 60_000_000, parts: 3 },
      tables: [
        { table: 'events', rows: 200_000, bytesOnDisk: 8_000_000 },
        { table: 'raw_log', rows: 1000, bytesOnDisk: 3_000_000 },
        { table: 'event_uuid_index', rows: 200_000, bytesOnDisk: 1_000_000 },
      ],
      deadLetters: [
        { stage: 'events-writer', topic: 'sluice.events', records: 3, error: 'Error:\n  too large' },
      ],
    }
    const lines = results({ e2e: [distributed], storage }).figures.map(formatFigure)
    expect(lines).toContain(
      'dead_letters 3 (target <= 0: not met; events-writer on sluice.events: 3 (Error: too large))',
    )
    expect(
      results({ e2e: [distributed], storage: { ...storage, deadLetters: [] } }).figures.map(formatFigure),
    ).toContain('dead_letters 0 (target <= 0: met)')
    expect(lines).toContain(
      'cpu_us_per_event 45.5 (no target; gzip 45.5: edge 10.0, worker 20.0, engine (ClickHouse stand-in process) 15.0, scheduler 0.5)',
    )
    expect(lines).toContain(
      'bytes_per_event_on_disk 40 (no target; events: 200,000 rows in 3 parts, after OPTIMIZE FINAL, 300 B uncompressed; every table of the database ÷ events: 60.0 B (raw_log 15.0, event_uuid_index 5.0))',
    )
  })

  it('names the segmentation figures by data set; a full run has the p50 target; differing counts fail the ratio', () => {
    const full = segmentationFigures(
      segmentationResult({
        set: '1m',
        installs: 1_000_000,
        events: 20_000_000,
        compiledMs: { ...latency, count: 20, p50: 1200, p99: 1500 },
        handWrittenMs: { ...latency, count: 20, p50: 1100, p99: 1400 },
        ratio: 1100 / 1200,
        counts: { compiled: { user_count: 1 }, hand: { user_count: 2 } },
        countsMatch: false,
      }),
      'unused',
      false,
    ).map(formatFigure)
    expect(full).toEqual([
      'segmentation_1m_p50_ms 1200 (target <= 1000: not met; 1,000,000 installs, 20,000,000 events, 20 runs)',
      'segmentation_1m_p99_ms 1500 (no target; hand-written p50 1100 ms, p99 1400 ms)',
      'segmentation_1m_ratio 0.92 (target >= 0.8: not met; hand-written p50 ÷ compiled p50; COUNTS DIFFER: compiled {"user_count":1}, hand-written {"user_count":2})',
    ])
    expect(
      segmentationFigures(
        { name: 'segmentation', skipped: 'measured on the embedded engine (chdb) only' },
        'x',
        false,
      ).map(formatFigure),
    ).toEqual([
      'segmentation_1m_p50_ms skipped: measured on the embedded engine (chdb) only',
      'segmentation_1m_p99_ms skipped: measured on the embedded engine (chdb) only',
      'segmentation_1m_ratio skipped: measured on the embedded engine (chdb) only',
    ])
    // The engine's CPU per query, where measured, goes with the p50.
    const [p50] = segmentationFigures(
      segmentationResult({
        compiledCpuMs: { ...latency, p50: 912.4 },
        handWrittenCpuMs: { ...latency, p50: 1306 },
        loadAverage: 13.04,
      }),
      'unused',
      true,
    ).map(formatFigure)
    expect(p50).toBe(
      "segmentation_100k_p50_ms 420 (no target; 100,000 installs, 2,000,000 events, 10 runs; engine CPU per query p50 912 ms (hand-written 1306 ms), load average 13.0; the 1,000 ms target is the 1M-install set's)",
    )
  })

  it('gives every dashboard page skipped with its reason when there is no chromium, and a line per run in report.md', () => {
    const why = 'no chromium at /usr/bin/chromium (Debian package chromium)'
    expect(dashboardFigures({ name: 'dashboard', skipped: why }, 'unused').map(formatFigure)).toEqual(
      [
        'sign_in',
        'health',
        'orgs',
        'app_settings',
        'analytics',
        'dead_letters',
        'exports',
        'audiences',
        'audience_new',
        'audience_edit',
        'campaigns',
        'campaign_new',
        'campaign',
        'campaign_edit',
        'push',
      ]
        .map((page) => `dashboard_${page}_load_ms skipped: ${why}`)
        .concat([`dashboard_load_ratio skipped: ${why}`, `dashboard_js_ratio skipped: ${why}`]),
    )
    expect(markdownReport(results({ dashboard: { name: 'dashboard', skipped: why } }), REPORTERS)).toContain(
      `- **dashboard**: skipped (${why}).`,
    )
    expect(markdownReport(results(), REPORTERS)).toContain(
      '- **dashboard** (5 first loads a page in fresh Chromium 140.0.7339.185 contexts, median / max; load average 12.3 → 14.1; 120 SDK rows): ' +
        'sign_in 212 / 260 ms (16.9 KB JS); analytics 1181 / 1400 ms (40 KB JS).',
    )
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
      firstShedAfterS: 2.25,
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
      'rss_max_mb 612 (target <= 1024 with 0 lost: met; anonymous 400 MB + file-backed 200 MB at most; 429/503 40.0% of answers (from 2.3 s on); lost 0 of 1500 accepted events)',
    )
    const lost = results({ overload: { ...base, lost: 3 } }).figures.find((f) => f.name === 'rss_max_mb')!
    expect(formatFigure(lost)).toMatch(
      /^rss_max_mb 612 \(target <= 1024 with 0 lost: not met; .*lost 3 of 1500/,
    )
  })

  it('counts an overload that never shed as not met: the bound on memory was not tested', () => {
    const overload = results().scenarios.overload
    expect(overload).toBeUndefined()
    const r = results({
      overload: {
        name: 'overload',
        app: 'a',
        targetBodiesPerSecond: 1,
        targetEventsPerSecond: 1,
        sendMs: 1,
        sent: 10,
        skipped: 0,
        statuses: { 202: 10 },
        shedShare: 0,
        latencyMs: latency,
        acceptedBodies: 10,
        acceptedEventsPerSecond: 1,
        acceptedEvents: 2500,
        drainComplete: true,
        drainMs: 1,
        stored: 2500,
        lost: 0,
        storedTwice: 0,
        storedNotAcknowledged: 0,
        rssMaxMb: 500,
        rssHwmMb: 500,
        rssAnonMaxMb: 300,
        rssFileMaxMb: 200,
        timeline: { accepted: [], shed: [], queryable: [] },
        cpu,
      },
    })
    expect(formatFigure(r.figures.find((f) => f.name === 'rss_max_mb')!)).toBe(
      'rss_max_mb 500 (target <= 1024 with 0 lost: not met; anonymous 300 MB + file-backed 200 MB at most; 429/503 0.0% of answers (never shed); lost 0 of 2500 accepted events)',
    )
  })

  it('compares the last minute of the sustained run with the first, and holds RSS under 1 GB', () => {
    const sustained = {
      ...e2eGzip,
      name: 'sustained',
      stored: 10_100_000,
      queryableAfterS: 180,
      firstMinuteEventsPerSecond: 60_000,
      lastMinuteEventsPerSecond: 51_000,
      rssMaxMb: 900,
    }
    const ok = results({ sustained }).figures.find((f) => f.name === 'sustained_rate_ratio')!
    expect(formatFigure(ok)).toBe(
      'sustained_rate_ratio 0.85 (target >= 0.8: met; last minute 51,000 ev/s against first minute 60,000 ev/s; 10,100,000 events in 180 s; RSS max 900 MB (under 1024: yes))',
    )
    const big = results({ sustained: { ...sustained, rssMaxMb: 1100 } }).figures
    expect(big.find((f) => f.name === 'sustained_rate_ratio')!.met).toBe(false)
    const slow = results({ sustained: { ...sustained, lastMinuteEventsPerSecond: 40_000 } }).figures
    expect(slow.find((f) => f.name === 'sustained_rate_ratio')).toMatchObject({ value: 0.67, met: false })
  })

  it('writes a Markdown table and compares two runs side by side', () => {
    const a = results()
    const b = results()
    b.baselines.floor![0]!.bytesPerSecond = 50e6
    const md = markdownReport(a, REPORTERS)
    expect(md).toContain(
      "| `edge_ratio` | 0.82 (plain 0.95, gzip 0.82; bytes per CPU second against the floor's: gzip 0.82; against a bare server that keeps no promise: plain 0.24, gzip 0.21) | >= 0.8 | met |",
    )
    expect(md).toContain('| chdb INSERT Native, gzip | 1 inserts | 100,000 rows/s |')
    expect(md).toMatch(
      /\| e2e-gzip .*\| 1\.20 \| 0\.60 \(Native\) \| 600,000 \/ 600,000 \| 28\.0 \(5\.0 \/ 7\.0 \/ 15\.0 \/ 1\.0\) \|/,
    )
    // Freshness split by stage, in the report and in the comparison.
    expect(md).toContain('Freshness by stage (2 samples; ms):')
    expect(md).toContain(
      '| 202 → consumed: on the log until the splitter takes it (behind the batch being written) | 100 | 900 | 900 | 900 | 500 | 900 |',
    )
    const table = compareReport(a, b, ['A', 'B'])
    expect(table).toMatch(/^freshness write p99 ms\s+2,000\s+2,000\s+\+0\.0%$/m)
    expect(table).toMatch(/baseline floor plain MB\/s\s+95\s+48\s+-50\.0%/)
    expect(table).toMatch(/^edge_ratio\s+0\.82\s+0\.82\s+\+0\.0%$/m)
  })

  it("weighs the query rollups' upkeep against the run's end-to-end CPU per event, where the budget is", () => {
    const query: QueryResult = {
      name: 'query',
      set: '1M',
      rows: { events: 1_000_000 },
      reused: true,
      generationMs: 0,
      dataDir: '/tmp/q',
      loadAverage: 1,
      shapes: [],
      upkeep: { events: 200_000, withUs: 2.74, withoutUs: 1.81, share: (2.74 - 1.81) / 1.81 },
    }
    const upkeep = buildFigures(results({ query }), REPORTERS)
      .map(formatFigure)
      .filter((line) => line.includes('upkeep'))
    // results() measured gzip at 28 µs per event end to end: 0.93 / 28 = 3.3 %.
    expect(upkeep).toEqual([
      "query_1m_rollup_upkeep_pct 51.4 (no target; the views' share of the insert's own engine CPU: 2.74 us per event through events_ingest with the rollup views, 1.81 us without (200,000 events in blocks of 50,000))",
      "query_1m_rollup_upkeep_e2e_pct 3.3 (target <= 10: met; the views' 0.93 us of engine CPU per event against cpu_us_per_event 28 us)",
    ])
    // A run without the end-to-end scenarios cannot weigh it.
    expect(queryFigures(query, 'unused', true, {}).map(formatFigure).at(-1)).toBe(
      'query_1m_rollup_upkeep_e2e_pct skipped: no end-to-end CPU per event in this run',
    )
  })

  it("prints a scenario's figures and paragraph through its reporter, without knowing the scenario", () => {
    const example: ScenarioReporter<{ name: 'example'; perSecond: number }> = {
      name: 'example',
      figures: (r, skipped) => [
        r === undefined
          ? { name: 'example_per_s', unit: '/s', skipped }
          : { name: 'example_per_s', unit: '/s', value: r.perSecond, detail: 'made up' },
      ],
      summary: (r) => `- **example**: ${r.perSecond}/s.`,
    }
    const ran = results({ example: { name: 'example', perSecond: 42 } })
    const reporters = [...REPORTERS, example]
    expect(buildFigures(ran, reporters).map(formatFigure).at(-1)).toBe(
      'example_per_s 42 (no target; made up)',
    )
    const md = markdownReport(ran, reporters)
    expect(md).toContain('- **example**: 42/s.')
    // The built-in ones go the same way, in REPORTERS' order.
    expect(md.indexOf('- **push** (broadcast to 100,000 installs')).toBeGreaterThan(
      md.indexOf('- **segmentation**'),
    )
    expect(md.indexOf('- **exports** (200k)')).toBeLessThan(md.indexOf('- **example**'))
    // Not run: its figures say why (here the quick budget), and report.md has no paragraph for it.
    const notRun = results({ example: undefined })
    notRun.skipped = { example: 'quick time budget used up' }
    expect(buildFigures(notRun, reporters).at(-1)).toEqual({
      name: 'example_per_s',
      unit: '/s',
      skipped: 'quick time budget used up',
    })
    expect(markdownReport(notRun, reporters)).not.toContain('**example**')
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

describe('events missing after an overload', () => {
  it('are lost once the drain completed, and only not yet stored while it had not', () => {
    expect(notStored({ lost: 3, drainComplete: true })).toBe('3 lost')
    expect(notStored({ lost: 23_322, drainComplete: false })).toBe(
      '23322 not stored when the drain ended (on the bus or lost)',
    )
  })
})
