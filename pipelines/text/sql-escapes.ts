/**
 * ClickHouse's backslash escapes, both ways: reading them in quoted strings, identifiers and query
 * parameters, and writing a string literal the engine reads back as it was. Pure: no I/O.
 */

const ESCAPES: Record<string, number> = { a: 7, b: 8, e: 27, f: 12, n: 10, r: 13, t: 9, v: 11, '0': 0 }

/**
 * Backslash escapes read the way ClickHouse reads them in quoted strings and identifiers: \xHH is a
 * byte, \N is nothing, the C escapes, and an unknown escape keeps its backslash ('100\%' stays
 * '100\%'). `quote` also turns a doubled quote into one. With `requote`, the text is to be parsed
 * again as a literal: a decoded ' is written as '' and \N is left alone.
 */
export function decodeEscapes(text: string, options: { quote?: string; requote?: boolean } = {}): string {
  const bytes: number[] = []
  const encoder = new TextEncoder()
  const pushText = (c: string) => {
    for (const b of encoder.encode(c)) bytes.push(b)
  }
  const pushByte = (b: number) => {
    if (options.requote && b === 0x27) bytes.push(0x27, 0x27)
    else bytes.push(b)
  }
  for (let i = 0; i < text.length; i++) {
    const c = text.charAt(i)
    if (options.quote !== undefined && c === options.quote && text.charAt(i + 1) === c) {
      pushByte(c.charCodeAt(0))
      i++
      continue
    }
    if (c !== '\\' || i + 1 >= text.length) {
      pushText(c)
      continue
    }
    const next = text.charAt(++i)
    if (next === 'x' && /^[0-9A-Fa-f]{2}$/.test(text.slice(i + 1, i + 3))) {
      pushByte(parseInt(text.slice(i + 1, i + 3), 16))
      i += 2
    } else if (next === 'N' && !options.requote) {
      // nothing: ClickHouse reads \N inside an escaped string as an empty piece
    } else if (next in ESCAPES) {
      bytes.push(ESCAPES[next] as number)
    } else if (next === '\\' || next === "'" || next === '"' || next === '`' || next === '/') {
      pushByte(next.charCodeAt(0))
    } else {
      bytes.push(0x5c)
      pushText(next)
    }
  }
  return new TextDecoder().decode(new Uint8Array(bytes))
}

/** `value` as a quoted string literal that the engine reads back as `value`. */
export function quoteString(value: string): string {
  let out = "'"
  for (const c of value) {
    switch (c) {
      case '\\':
        out += '\\\\'
        break
      case "'":
        out += "\\'"
        break
      case '\n':
        out += '\\n'
        break
      case '\r':
        out += '\\r'
        break
      case '\t':
        out += '\\t'
        break
      case '\0':
        out += '\\0'
        break
      default:
        out += c
    }
  }
  return out + "'"
}
