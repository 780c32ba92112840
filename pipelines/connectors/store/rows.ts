/** Serialise rows as JSONEachRow, the one insert format both engines parse natively. */
export function toJsonEachRow(rows: readonly object[]): Buffer {
  let out = ''
  for (const row of rows) out += JSON.stringify(row) + '\n'
  return Buffer.from(out)
}

export function parseJsonEachRow<T>(text: string): T[] {
  const rows: T[] = []
  let start = 0
  while (start < text.length) {
    let end = text.indexOf('\n', start)
    if (end === -1) end = text.length
    if (end > start) rows.push(JSON.parse(text.slice(start, end)) as T)
    start = end + 1
  }
  return rows
}

export function insertSettings(
  options: { dedupToken?: string; settings?: Record<string, string | number> } = {},
) {
  const settings: Record<string, string | number> = { ...options.settings }
  if (options.dedupToken !== undefined) settings.insert_deduplication_token = options.dedupToken
  return settings
}
