/**
 * A large set of strings as one query parameter, for `column IN <sql>`. Thousands of values go as
 * one newline-separated String: binding it is a single escape instead of one per element, and the
 * engine builds the set from it faster than from an array literal (about 40 % less engine time
 * for 9,000 uuids). Values holding a newline cannot be joined, so the array form is the fallback.
 *
 * Either form is wrapped in a subquery. Given a constant array of about 1 MB or more on the right
 * of IN (some 30,000 uuids), ClickHouse 26.7 plans a linear `has(array, column)` scan per row
 * instead of a hash set: a 30,000-uuid look-up in a 1M-row table took 83 s instead of 60 ms. The
 * subquery always builds a set (and still narrows the primary key), at the same cost below that size.
 */
export function stringSet(name: string, values: string[]): { sql: string; value: string | string[] } {
  // An empty joined string would split into [''], a set holding the empty string.
  if (values.length === 0) return { sql: `{${name}:Array(String)}`, value: [] }
  for (const v of values) {
    if (v.includes('\n')) return { sql: `(SELECT arrayJoin({${name}:Array(String)}))`, value: values }
  }
  return { sql: `(SELECT arrayJoin(splitByChar('\\n', {${name}:String})))`, value: values.join('\n') }
}
