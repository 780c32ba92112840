import { describe, expect, it } from 'vitest'
import { barChart, escapeXml, formatTick, lineChart, niceTicks } from '../../bench/svg.ts'

/** A small XML well-formedness check: balanced tags, quoted attributes, no stray `<` or `&`. */
function wellFormed(xml: string): string[] {
  const problems: string[] = []
  const stack: string[] = []
  const tag = /<(\/?)([A-Za-z][\w:-]*)((?:\s+[\w:-]+="[^"<]*")*)\s*(\/?)>/y
  let i = 0
  let roots = 0
  while (i < xml.length) {
    const lt = xml.indexOf('<', i)
    const text = xml.slice(i, lt === -1 ? xml.length : lt)
    if (/&(?!(amp|lt|gt|quot|apos|#\d+);)/.test(text))
      problems.push(`bad entity in text: ${text.slice(0, 40)}`)
    if (lt === -1) break
    tag.lastIndex = lt
    const m = tag.exec(xml)
    if (!m) {
      problems.push(`malformed tag at ${lt}: ${xml.slice(lt, lt + 40)}`)
      break
    }
    const [, close, name, , selfClose] = m
    if (close) {
      if (stack.pop() !== name) problems.push(`unbalanced </${name}>`)
    } else if (!selfClose) {
      if (stack.length === 0) roots++
      stack.push(name!)
    } else if (stack.length === 0) roots++
    i = tag.lastIndex
  }
  if (stack.length > 0) problems.push(`unclosed: ${stack.join(', ')}`)
  if (roots !== 1) problems.push(`${roots} root elements`)
  return problems
}

describe('bench SVG charts', () => {
  it('draws a well-formed line chart with a path per series and a legend', () => {
    const svg = lineChart({
      title: 'Rates <ev/s> & "more"',
      xLabel: 'seconds',
      yLabel: 'events/s',
      series: [
        {
          name: 'accepted',
          points: [
            [0, 0],
            [1, 1200],
            [2, 1500],
          ],
        },
        {
          name: 'queryable',
          points: [
            [1, 800],
            [2, 1400],
          ],
        },
        { name: 'empty', points: [] },
      ],
    })
    expect(wellFormed(svg)).toEqual([])
    expect(svg.startsWith('<svg xmlns="http://www.w3.org/2000/svg"')).toBe(true)
    expect(svg.match(/<path /g)).toHaveLength(2)
    expect(svg).toContain('Rates &lt;ev/s&gt; &amp; &quot;more&quot;')
    expect(svg).toContain('>queryable</text>')
    expect(svg).not.toContain('NaN')
  })

  it('draws a well-formed grouped bar chart, skipping missing values', () => {
    const svg = barChart({
      title: 'Latency',
      yLabel: 'ms',
      series: ['p50', 'p90', 'p99'],
      groups: [
        { label: 'bare', values: { p50: 5, p90: 9, p99: 17 } },
        { label: 'sluice', values: { p50: 120, p90: undefined, p99: 310 } },
      ],
    })
    expect(wellFormed(svg)).toEqual([])
    expect(svg.match(/<\/title><\/rect>/g)).toHaveLength(5)
    expect(svg).not.toContain('NaN')
  })

  it('copes with no data at all', () => {
    expect(wellFormed(lineChart({ title: 't', xLabel: 'x', yLabel: 'y', series: [] }))).toEqual([])
    expect(wellFormed(barChart({ title: 't', yLabel: 'y', series: ['a'], groups: [] }))).toEqual([])
  })

  it('picks nice ticks and short labels', () => {
    expect(niceTicks(0, 9.3)).toEqual([0, 2, 4, 6, 8, 10])
    expect(niceTicks(0, 1234)).toEqual([0, 500, 1000, 1500])
    expect(niceTicks(0, 0)).toEqual([0, 0.2, 0.4, 0.6, 0.8, 1])
    expect(formatTick(1_500_000)).toBe('1.5M')
    expect(formatTick(2000)).toBe('2k')
    expect(formatTick(0.25)).toBe('0.25')
    expect(escapeXml(`<a href='x'>&</a>`)).toBe('&lt;a href=&apos;x&apos;&gt;&amp;&lt;/a&gt;')
  })
})
