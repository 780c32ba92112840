/**
 * Text bound for the engine must be valid UTF-8. JavaScript strings can hold lone surrogates
 * (`"\ud800"` is valid JSON), which have no UTF-8 form: ClickHouse refuses a row carrying one
 * (Code 25), and a record that fails every retry stalls its partition. So every string that
 * leaves for the store is well formed (a lone surrogate becomes U+FFFD, as TextEncoder does),
 * and every cut falls between code points, never inside a surrogate pair.
 */

/** `s` with each lone surrogate replaced by U+FFFD; `s` itself when it is well formed. */
export function wellFormed(s: string): string {
  return s.isWellFormed() ? s : s.toWellFormed()
}

/** At most `max` code points of `s` (well formed), never ending on half a surrogate pair. */
export function cutCodePoints(s: string, max: number): string {
  if (s.length <= max) return wellFormed(s)
  let units = 0
  for (let points = 0; points < max && units < s.length; points++) {
    const c = s.charCodeAt(units)
    const pair = c >= 0xd800 && c <= 0xdbff && units + 1 < s.length && isLowSurrogate(s.charCodeAt(units + 1))
    units += pair ? 2 : 1
  }
  return wellFormed(s.slice(0, units))
}

/** `s` cut to `max` code points with an ellipsis when it was longer. */
export function abbreviate(s: string, max: number): string {
  const cut = cutCodePoints(s, max)
  return cut.length < s.length ? `${cut}…` : cut
}

const isLowSurrogate = (c: number) => c >= 0xdc00 && c <= 0xdfff

// A lone surrogate can only enter a string parsed from valid UTF-8 text through a JSON escape
// (`\ud800`..`\udfff`); text without one needs no walk of the parsed value.
const SURROGATE_ESCAPE = /\\u[dD][89a-fA-F]/

/**
 * JSON.parse whose strings (values and member names) are all well formed. Costs one scan of the
 * text when it holds no surrogate escape, which is almost always.
 */
export function parseJsonWellFormed(text: string): unknown {
  // A line that is not JSON throws: without a stack trace (nobody reads it; the message says what
  // is wrong) a throw costs about half as much, which is most of what a bad line costs.
  const stackTraceLimit = Error.stackTraceLimit
  Error.stackTraceLimit = 0
  let value: unknown
  try {
    value = JSON.parse(text)
  } finally {
    Error.stackTraceLimit = stackTraceLimit
  }
  return text.indexOf('\\u') !== -1 && SURROGATE_ESCAPE.test(text) ? wellFormedValue(value) : value
}

/**
 * A parsed JSON value with every string and member name well formed. Walks with its own stack, so
 * a deeply nested line cannot overflow the call stack; objects are rebuilt only when a name changes.
 */
export function wellFormedValue(value: unknown): unknown {
  if (typeof value !== 'object' || value === null)
    return typeof value === 'string' ? wellFormed(value) : value
  const root = { value }
  const stack: [Record<string | number, unknown>, string | number][] = [[root, 'value']]
  while (stack.length > 0) {
    const [holder, key] = stack.pop()!
    const v = holder[key]
    if (typeof v === 'string') {
      if (!v.isWellFormed()) holder[key] = v.toWellFormed()
    } else if (Array.isArray(v)) {
      for (let i = 0; i < v.length; i++) stack.push([v as unknown as Record<number, unknown>, i])
    } else if (typeof v === 'object' && v !== null) {
      const o = renameIllFormed(v as Record<string, unknown>)
      if (o !== v) holder[key] = o
      for (const name in o) stack.push([o, name])
    }
  }
  return root.value
}

/** `o` itself, or a copy whose ill-formed member names are made well formed. */
function renameIllFormed(o: Record<string, unknown>): Record<string, unknown> {
  let renamed = false
  for (const name in o) if (!name.isWellFormed()) renamed = true
  if (!renamed) return o
  // Two names may become one ("\ud800" and "\udbff" both turn into U+FFFD): the last one wins, as
  // JSON.parse does with a repeated name. defineProperty keeps a "__proto__" member a member.
  const out: Record<string, unknown> = {}
  for (const name in o)
    Object.defineProperty(out, name.toWellFormed(), {
      value: o[name],
      enumerable: true,
      writable: true,
      configurable: true,
    })
  return out
}
