import { rejected, tooLong, type RejectedLine } from './line-checks.ts'
import { forEachLine } from './lines.ts'

/**
 * The walk both upload validators (server events and SDK rows) share: check each line, refuse what
 * cannot be read, and keep the first line of each identity (`identity` of a valid item), refusing
 * later ones as `duplicate_in_body`. Only the first `maxRejects` rejected lines are kept; the
 * others are counted, so a small body of a million bad lines costs a count, not a million reasons.
 */
export function validateLines<T extends { uuid: string }, R extends string>(
  body: Buffer,
  check: (text: string, line: number) => T | RejectedLine<R>,
  identity: (item: T) => string,
  limits: { maxLineBytes?: number | undefined; maxRejects?: number | undefined },
  /**
   * Where an identity is unique (an event's app): identities are kept per scope, so no key string
   * is built per line (a concatenated key must be flattened to be hashed). One scope if absent.
   */
  scope: (item: T) => string = () => '',
  /**
   * Takes each valid item as it is found, instead of the result's `items` (left empty): what the
   * caller keeps of an item may be far smaller than the item.
   */
  onItem?: (item: T) => void,
): {
  items: T[]
  rejects: RejectedLine<R | 'duplicate_in_body' | 'line_too_long' | 'invalid_json'>[]
  rejected: number
  lines: number
} {
  const { maxLineBytes, maxRejects = Infinity } = limits
  const items: T[] = []
  const rejects: RejectedLine<R | 'duplicate_in_body' | 'line_too_long' | 'invalid_json'>[] = []
  let rejectedCount = 0
  const reject = (r: RejectedLine<R | 'duplicate_in_body' | 'line_too_long' | 'invalid_json'>) => {
    if (rejectedCount++ < maxRejects) rejects.push(r)
  }
  const seen = new Map<string, Map<string, number>>()
  const lines = forEachLine(
    body,
    {
      line(text, lineNumber) {
        // Past the rejects kept, a rejected line is only counted, and a line that does not start
        // as an object is rejected whatever it holds (invalid_json or not_an_object): no need to
        // parse it. A 2 KB gzip body of a million such lines then costs a walk over its lines.
        if (rejectedCount >= maxRejects && !startsAsObject(text)) {
          rejectedCount++
          return
        }
        const result = check(text, lineNumber)
        if ('reason' in result) {
          reject(result)
          return
        }
        const key = identity(result)
        const where = scope(result)
        let lines = seen.get(where)
        if (!lines) seen.set(where, (lines = new Map<string, number>()))
        const first = lines.get(key)
        if (first !== undefined) {
          reject(rejected(lineNumber, result.uuid, 'duplicate_in_body', `uuid already used on line ${first}`))
          return
        }
        lines.set(key, lineNumber)
        if (onItem) onItem(result)
        else items.push(result)
      },
      refused(lineNumber, why, bytes) {
        reject(
          why === 'line_too_long'
            ? tooLong(lineNumber, bytes, maxLineBytes ?? Infinity)
            : rejected(lineNumber, null, 'invalid_json', 'line is not valid UTF-8'),
        )
      },
    },
    maxLineBytes,
  )
  return { items, rejects, rejected: rejectedCount, lines }
}

/** The first character that is not JSON whitespace is `{`. */
function startsAsObject(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (c === 0x7b) return true
    if (c !== 0x20 && c !== 0x09 && c !== 0x0d && c !== 0x0a) return false
  }
  return false
}
