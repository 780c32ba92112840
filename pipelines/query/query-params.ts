/**
 * The Query API's parameters as clients send them, before any meaning is given to them: a query
 * string or a form body (`key=value` pairs, Rails brackets such as `metrics[]=users` and
 * `conditions[day][]=between` nesting into lists and objects), or a JSON body (an object). Both
 * become one plain object; parse-query.ts reads it. Pure.
 */

export type RawValue = string | null | number | boolean | RawValue[] | { [key: string]: RawValue }
export type RawParams = Record<string, RawValue>

/** Most bracket levels a key may nest (`conditions[a:x][]` is two): deeper keys are refused. */
const MAX_DEPTH = 4
/** Most entries a list built from brackets may hold: more is refused, not silently cut. */
export const MAX_LIST_ENTRIES = 10_000

export class ParamsError extends Error {
  override name = 'ParamsError'
}

/**
 * Rails-style bracket keys to nested values: `a[]=1&a[]=2` → {a: ['1', '2']},
 * `c[day][]=between` → {c: {day: ['between']}}, `c[country]=fr` → {c: {country: 'fr'}}. A plain key
 * given twice becomes a list. `a[0]=x` (indexed) is taken as `a[]`, in order of appearance.
 */
export function nestPairs(pairs: Iterable<readonly [string, string]>): RawParams {
  const out: RawParams = {}
  for (const [key, value] of pairs) {
    const path = bracketPath(key)
    if (!path) continue
    put(out, path, value, key)
  }
  return out
}

/** ['conditions', 'day', ''] for `conditions[day][]`; undefined when the key is not of that shape. */
function bracketPath(key: string): string[] | undefined {
  const open = key.indexOf('[')
  if (open < 0) return [key]
  const head = key.slice(0, open)
  const rest = key.slice(open)
  const parts: string[] = [head]
  const re = /\[([^\]]*)\]/gy
  let m: RegExpExecArray | null
  let consumed = 0
  while ((m = re.exec(rest)) !== null) {
    parts.push(m[1] ?? '')
    consumed = re.lastIndex
  }
  // Whatever does not close is part of the name, as Rack reads it.
  if (consumed !== rest.length || head === '') return [key]
  if (parts.length - 1 > MAX_DEPTH) throw new ParamsError(`parameter ${key} nests too deep`)
  // `[0]`, `[1]`: indexed lists, read in order like `[]`.
  return parts.map((p, i) => (i > 0 && /^\d+$/.test(p) ? '' : p))
}

function put(target: Record<string, RawValue>, path: string[], value: string, key: string): void {
  const [name, ...rest] = path as [string, ...string[]]
  if (rest.length === 0) {
    const existing = target[name]
    if (existing === undefined) target[name] = value
    else if (Array.isArray(existing)) pushEntry(existing, value, key)
    else if (typeof existing === 'string') target[name] = [existing, value]
    else throw new ParamsError(`parameter ${key} is given both as a value and with brackets`)
    return
  }
  const [next, ...tail] = rest as [string, ...string[]]
  if (next === '') {
    let list = target[name]
    if (list === undefined) target[name] = list = []
    if (!Array.isArray(list)) throw new ParamsError(`parameter ${key} mixes a list and a value`)
    if (tail.length === 0) pushEntry(list, value, key)
    else {
      // `a[][b]=…`: a list of objects; each new key that is already set starts the next object.
      const last = list[list.length - 1]
      const leaf = tail[0]!
      if (last && typeof last === 'object' && !Array.isArray(last) && !(leaf in last))
        put(last, tail, value, key)
      else {
        const obj: Record<string, RawValue> = {}
        pushEntry(list, obj, key)
        put(obj, tail, value, key)
      }
    }
    return
  }
  let obj = target[name]
  if (obj === undefined) target[name] = obj = {}
  if (typeof obj !== 'object' || obj === null || Array.isArray(obj))
    throw new ParamsError(`parameter ${key} mixes an object and a value`)
  put(obj, rest, value, key)
}

function pushEntry(list: RawValue[], value: RawValue, key: string): void {
  if (list.length >= MAX_LIST_ENTRIES) throw new ParamsError(`parameter ${key} has too many entries`)
  list.push(value)
}

/**
 * A name list as clients write it: a comma list (spaces after commas allowed; commas inside
 * parentheses belong to the name, as in `avg(a:x)`), a JSON array in a string, a list (Rails
 * brackets or a JSON body's array), whose entries may be comma lists themselves.
 */
export function nameList(value: RawValue | undefined, what: string): string[] {
  if (value === undefined || value === null) return []
  if (Array.isArray(value)) return value.flatMap((v) => nameList(v, what))
  if (typeof value === 'object' || typeof value === 'boolean' || typeof value === 'number')
    throw new ParamsError(`${what} must be a list of names`)
  const text = value.trim()
  if (text.startsWith('[')) {
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      throw new ParamsError(`${what} is not a valid JSON array`)
    }
    if (!Array.isArray(parsed) || !parsed.every((v) => typeof v === 'string'))
      throw new ParamsError(`${what} must be a JSON array of names`)
    return parsed.map((v) => v.trim()).filter((v) => v !== '')
  }
  return splitTopLevel(text)
    .map((v) => v.trim())
    .filter((v) => v !== '')
}

/** Splits on commas outside parentheses. */
export function splitTopLevel(text: string): string[] {
  const out: string[] = []
  let depth = 0
  let start = 0
  for (let i = 0; i < text.length; i++) {
    const ch = text[i]
    if (ch === '(') depth++
    else if (ch === ')') depth = Math.max(0, depth - 1)
    else if (ch === ',' && depth === 0) {
      out.push(text.slice(start, i))
      start = i + 1
    }
  }
  out.push(text.slice(start))
  return out
}

/** Pairs of a query string or a form body (application/x-www-form-urlencoded). */
export function formPairs(text: string): [string, string][] {
  return [...new URLSearchParams(text)]
}
