/**
 * A large set of strings as one query parameter, for `column IN <sql>`. Thousands of values go as
 * one newline-separated String: binding it is a single escape instead of one per element, and the
 * engine builds the set from it faster than from an array literal (about 40 % less engine time
 * for 9,000 uuids). Values holding a newline cannot be joined, so the array form is the fallback.
 */
export function stringSet(name: string, values: string[]): { sql: string; value: string | string[] } {
  // An empty joined string would split into [''], a set holding the empty string.
  if (values.length === 0) return { sql: `{${name}:Array(String)}`, value: [] }
  for (const v of values) {
    if (v.includes('\n')) return { sql: `{${name}:Array(String)}`, value: values }
  }
  return { sql: `splitByChar('\\n', {${name}:String})`, value: values.join('\n') }
}
