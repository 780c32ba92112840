import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import { hotCounter, HotHistogram } from './hot-metrics.ts'
import { THREAD_KINDS, threadCpuSeconds } from './thread-cpu.ts'

/** All Prometheus metrics of one process, served at /metrics. */
export function createMetrics() {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry, prefix: 'sluice_' })
  return {
    registry,
    // Updated per request and per upload: hot-metrics.ts.
    httpRequests: hotCounter({
      name: 'sluice_http_requests_total',
      help: 'HTTP requests by route and status',
      labelNames: ['method', 'route', 'status'] as const,
      registers: [registry],
    }),
    httpDuration: new HotHistogram({
      name: 'sluice_http_request_duration_seconds',
      help: 'HTTP request latency',
      labelNames: ['method', 'route'],
      buckets: [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    busProduced: hotCounter({
      name: 'sluice_bus_produced_records_total',
      help: 'Records produced to the bus',
      labelNames: ['topic'] as const,
      registers: [registry],
    }),
    busConsumed: new Counter({
      name: 'sluice_bus_consumed_records_total',
      help: 'Records consumed and committed',
      labelNames: ['topic'] as const,
      registers: [registry],
    }),
    busLag: new Gauge({
      name: 'sluice_bus_lag_records',
      help: 'Uncommitted records per topic (as last sampled by the edge)',
      labelNames: ['topic'] as const,
      registers: [registry],
    }),
    eventsStored: new Counter({
      name: 'sluice_events_stored_total',
      help: 'Events inserted into the events table',
      labelNames: ['source'] as const,
      registers: [registry],
    }),
    eventsRejected: new Counter({
      name: 'sluice_events_rejected_total',
      help: 'Event lines rejected, by reason',
      labelNames: ['reason'] as const,
      registers: [registry],
    }),
    deadLetters: new Counter({
      name: 'sluice_dead_letters_total',
      help: 'Records a stage gave up on, kept in the dead_letters table, by stage',
      labelNames: ['stage'] as const,
      registers: [registry],
    }),
    stageDuration: new Histogram({
      name: 'sluice_stage_duration_seconds',
      help: 'Time a stage took over one batch, retries and dead-lettering included, by stage',
      labelNames: ['stage'] as const,
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30],
      registers: [registry],
    }),
    stageInFlight: new Gauge({
      name: 'sluice_stage_batches_in_flight',
      help: 'Bus batches a stage is handling at this moment (taken from the bus, not yet finished), by stage',
      labelNames: ['stage'] as const,
      registers: [registry],
    }),
    stageRecords: new Counter({
      name: 'sluice_stage_records_total',
      help: 'Bus records a stage finished with and committed (dead-lettered ones included), by stage',
      labelNames: ['stage'] as const,
      registers: [registry],
    }),
    consumerLag: new Gauge({
      name: 'sluice_consumer_lag_records',
      help: 'Records produced but not yet committed by a consumer group, sampled by its consumers every 5 s',
      labelNames: ['group', 'topic'] as const,
      registers: [registry],
    }),
    threadCpu: new Gauge({
      name: 'sluice_thread_cpu_seconds',
      help: 'CPU seconds used since the process started, by kind of thread: main (event loop), cpu_pool, engine (chdb and the libuv threads it runs on), node (V8 helpers)',
      labelNames: ['thread'] as const,
      registers: [registry],
      collect() {
        const seconds = threadCpuSeconds()
        for (const kind of THREAD_KINDS) this.set({ thread: kind }, seconds[kind])
      },
    }),
    stageRetries: new Counter({
      name: 'sluice_stage_retries_total',
      help: 'Retries of a failed stage call (a batch, or one record of it), by stage',
      labelNames: ['stage'] as const,
      registers: [registry],
    }),
    pushDeliveries: new Counter({
      name: 'sluice_push_deliveries_total',
      help: 'Push deliveries recorded, by platform, transport and status (sent, failed)',
      labelNames: ['platform', 'transport', 'status'] as const,
      registers: [registry],
    }),
  }
}

export type Metrics = ReturnType<typeof createMetrics>
