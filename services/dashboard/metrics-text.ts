/** One sample of a Prometheus text exposition: `name{labels} value`. */
export interface MetricSample {
  name: string
  labels: Record<string, string>
  value: number
}

const LINE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g

/** The samples of a /metrics answer (comments and malformed lines skipped). Pure. */
export function parseMetrics(text: string): MetricSample[] {
  const samples: MetricSample[] = []
  for (const line of text.split('\n')) {
    if (line.startsWith('#')) continue
    const match = LINE.exec(line)
    if (!match) continue
    const labels: Record<string, string> = {}
    for (const [, key, value] of (match[2] ?? '').matchAll(LABEL)) labels[key!] = value!.replace(/\\(.)/g, '$1')
    const value = Number(match[3])
    if (Number.isFinite(value)) samples.push({ name: match[1]!, labels, value })
  }
  return samples
}

/** The sum of a metric's samples whose labels pass `where`. */
export function sumOf(
  samples: readonly MetricSample[],
  name: string,
  where: (labels: Record<string, string>) => boolean = () => true,
): number {
  let total = 0
  for (const s of samples) if (s.name === name && where(s.labels)) total += s.value
  return total
}

/** What the health page shows as rates: counters per second between two samples. */
export const HEALTH_COUNTERS = {
  uploadsAccepted: (s: readonly MetricSample[]) =>
    sumOf(s, 'sluice_bus_produced_records_total', (l) => /uploads/.test(l.topic ?? '')),
  eventsStored: (s: readonly MetricSample[]) => sumOf(s, 'sluice_events_stored_total'),
  eventsRejected: (s: readonly MetricSample[]) => sumOf(s, 'sluice_events_rejected_total'),
  deadLetters: (s: readonly MetricSample[]) => sumOf(s, 'sluice_dead_letters_total'),
} as const
export type HealthCounter = keyof typeof HEALTH_COUNTERS

/**
 * Counter rates of this edge between the samples the health page takes: the last sample at least
 * a second old is the base, so a page refreshing every 2 s shows the rate over its last interval.
 */
export class CounterRates {
  private base: { at: number; totals: Record<HealthCounter, number> } | undefined
  private last: Record<HealthCounter, number> | undefined

  update(samples: readonly MetricSample[], now = Date.now()) {
    const totals = Object.fromEntries(
      Object.entries(HEALTH_COUNTERS).map(([k, f]) => [k, f(samples)]),
    ) as Record<HealthCounter, number>
    if (this.base && now - this.base.at >= 1000) {
      const seconds = (now - this.base.at) / 1000
      const base = this.base.totals
      this.last = Object.fromEntries(
        Object.entries(totals).map(([k, v]) => [k, Math.max(0, v - base[k as HealthCounter]) / seconds]),
      ) as Record<HealthCounter, number>
      this.base = { at: now, totals }
    } else if (!this.base) this.base = { at: now, totals }
    return { totals, rates: this.last }
  }
}
