/**
 * A tiny SVG chart module (no dependency): a line chart of series over time and a grouped bar
 * chart. Output is a standalone, well-formed SVG document.
 */

export interface LineSeries {
  name: string
  points: readonly (readonly [number, number])[]
}

export interface BarGroup {
  /** The category on the x axis (e.g. a scenario). */
  label: string
  /** One bar per series name (e.g. p50, p90, p99). */
  values: Readonly<Record<string, number | undefined>>
}

interface Frame {
  width: number
  height: number
  left: number
  right: number
  top: number
  bottom: number
}

const PALETTE = ['#2563eb', '#dc2626', '#16a34a', '#d97706', '#7c3aed', '#0891b2', '#db2777', '#4b5563']

export function escapeXml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&apos;')
}

/** "Nice" tick values covering [min, max]: steps of 1, 2 or 5 times a power of ten. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!Number.isFinite(min) || !Number.isFinite(max)) return [0]
  if (max <= min) max = min + 1
  const raw = (max - min) / Math.max(1, count)
  const power = 10 ** Math.floor(Math.log10(raw))
  const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= raw) ?? 10 * power
  const first = Math.floor(min / step) * step
  const ticks: number[] = []
  for (let v = first; v <= max + step * 1e-9; v += step) ticks.push(Number(v.toPrecision(12)))
  if (ticks[ticks.length - 1]! < max) ticks.push(Number((ticks[ticks.length - 1]! + step).toPrecision(12)))
  return ticks
}

/** 1234567 → "1.2M", 0.5 → "0.5". */
export function formatTick(value: number): string {
  const abs = Math.abs(value)
  if (abs >= 1e9) return `${trim(value / 1e9)}G`
  if (abs >= 1e6) return `${trim(value / 1e6)}M`
  if (abs >= 1e3) return `${trim(value / 1e3)}k`
  return trim(value)
}

const trim = (v: number) => String(Number(v.toFixed(2)))
const fmt = (v: number) => Number(v.toFixed(2)).toString()

function open(frame: Frame, title: string): string[] {
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${frame.width}" height="${frame.height}" viewBox="0 0 ${frame.width} ${frame.height}" font-family="sans-serif" font-size="11">`,
    `<rect x="0" y="0" width="${frame.width}" height="${frame.height}" fill="#ffffff"/>`,
    `<text x="${frame.width / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">${escapeXml(title)}</text>`,
  ]
}

function yAxis(frame: Frame, ticks: number[], scaleY: (v: number) => number, label: string): string[] {
  const out: string[] = []
  const x0 = frame.left
  const x1 = frame.width - frame.right
  for (const t of ticks) {
    const y = fmt(scaleY(t))
    out.push(`<line x1="${x0}" y1="${y}" x2="${x1}" y2="${y}" stroke="#e5e7eb"/>`)
    out.push(
      `<text x="${x0 - 6}" y="${y}" text-anchor="end" dominant-baseline="middle">${escapeXml(formatTick(t))}</text>`,
    )
  }
  const midY = (frame.top + frame.height - frame.bottom) / 2
  out.push(
    `<text x="14" y="${fmt(midY)}" text-anchor="middle" transform="rotate(-90 14 ${fmt(midY)})">${escapeXml(label)}</text>`,
  )
  out.push(
    `<line x1="${x0}" y1="${frame.top}" x2="${x0}" y2="${frame.height - frame.bottom}" stroke="#111827"/>`,
    `<line x1="${x0}" y1="${frame.height - frame.bottom}" x2="${x1}" y2="${frame.height - frame.bottom}" stroke="#111827"/>`,
  )
  return out
}

function legend(frame: Frame, names: readonly string[]): string[] {
  const out: string[] = []
  let x = frame.left
  const y = frame.height - 12
  names.forEach((name, i) => {
    const color = PALETTE[i % PALETTE.length]!
    out.push(`<rect x="${x}" y="${y - 8}" width="10" height="10" fill="${color}"/>`)
    out.push(`<text x="${x + 14}" y="${y}" >${escapeXml(name)}</text>`)
    x += 24 + name.length * 6.5
  })
  return out
}

/** A line chart: x is usually seconds since the start of the scenario. */
export function lineChart(options: {
  title: string
  xLabel: string
  yLabel: string
  series: readonly LineSeries[]
  width?: number
  height?: number
}): string {
  const frame: Frame = {
    width: options.width ?? 720,
    height: options.height ?? 360,
    left: 64,
    right: 20,
    top: 32,
    bottom: 64,
  }
  const all = options.series.flatMap((s) => s.points)
  const xs = all.map((p) => p[0])
  const ys = all.map((p) => p[1])
  const xTicks = niceTicks(Math.min(0, ...xs), xs.length > 0 ? Math.max(...xs) : 1)
  const yTicks = niceTicks(0, ys.length > 0 ? Math.max(...ys) : 1)
  const xMin = xTicks[0]!
  const xMax = xTicks[xTicks.length - 1]!
  const yMax = yTicks[yTicks.length - 1]!
  const plotW = frame.width - frame.left - frame.right
  const plotH = frame.height - frame.top - frame.bottom
  const scaleX = (v: number) => frame.left + ((v - xMin) / (xMax - xMin || 1)) * plotW
  const scaleY = (v: number) => frame.top + plotH - (v / (yMax || 1)) * plotH
  const out = open(frame, options.title)
  out.push(...yAxis(frame, yTicks, scaleY, options.yLabel))
  for (const t of xTicks) {
    const x = fmt(scaleX(t))
    out.push(
      `<text x="${x}" y="${frame.height - frame.bottom + 14}" text-anchor="middle">${escapeXml(formatTick(t))}</text>`,
    )
  }
  out.push(
    `<text x="${fmt(frame.left + plotW / 2)}" y="${frame.height - frame.bottom + 30}" text-anchor="middle">${escapeXml(options.xLabel)}</text>`,
  )
  options.series.forEach((s, i) => {
    if (s.points.length === 0) return
    const color = PALETTE[i % PALETTE.length]!
    const d = s.points
      .map((p, j) => `${j === 0 ? 'M' : 'L'}${fmt(scaleX(p[0]))},${fmt(scaleY(p[1]))}`)
      .join(' ')
    out.push(`<path d="${d}" fill="none" stroke="${color}" stroke-width="2"/>`)
  })
  out.push(
    ...legend(
      frame,
      options.series.map((s) => s.name),
    ),
  )
  out.push('</svg>')
  return out.join('\n') + '\n'
}

/** A grouped bar chart: one group per label, one bar per series name. Missing values draw no bar. */
export function barChart(options: {
  title: string
  yLabel: string
  groups: readonly BarGroup[]
  series: readonly string[]
  width?: number
  height?: number
}): string {
  const frame: Frame = {
    width: options.width ?? 720,
    height: options.height ?? 360,
    left: 64,
    right: 20,
    top: 32,
    bottom: 64,
  }
  const values = options.groups.flatMap((g) =>
    options.series.map((s) => g.values[s]).filter((v): v is number => v !== undefined && Number.isFinite(v)),
  )
  const yTicks = niceTicks(0, values.length > 0 ? Math.max(...values) : 1)
  const yMax = yTicks[yTicks.length - 1]!
  const plotW = frame.width - frame.left - frame.right
  const plotH = frame.height - frame.top - frame.bottom
  const scaleY = (v: number) => frame.top + plotH - (Math.max(0, v) / (yMax || 1)) * plotH
  const out = open(frame, options.title)
  out.push(...yAxis(frame, yTicks, scaleY, options.yLabel))
  const groupW = plotW / Math.max(1, options.groups.length)
  const barW = (groupW * 0.8) / Math.max(1, options.series.length)
  options.groups.forEach((g, gi) => {
    const gx = frame.left + gi * groupW + groupW * 0.1
    options.series.forEach((name, si) => {
      const v = g.values[name]
      if (v === undefined || !Number.isFinite(v)) return
      const y = scaleY(v)
      const color = PALETTE[si % PALETTE.length]!
      out.push(
        `<rect x="${fmt(gx + si * barW)}" y="${fmt(y)}" width="${fmt(barW * 0.9)}" height="${fmt(frame.top + plotH - y)}" fill="${color}"><title>${escapeXml(`${g.label} ${name}: ${formatTick(v)}`)}</title></rect>`,
      )
    })
    out.push(
      `<text x="${fmt(gx + groupW * 0.4)}" y="${frame.height - frame.bottom + 14}" text-anchor="middle">${escapeXml(g.label)}</text>`,
    )
  })
  out.push(...legend(frame, options.series))
  out.push('</svg>')
  return out.join('\n') + '\n'
}
