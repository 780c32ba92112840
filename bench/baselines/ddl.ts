/** The `CREATE TABLE IF NOT EXISTS events (…) ENGINE … ;` statement of a migration file's text. */
export function eventsDdl(sql: string): string {
  const match = /CREATE TABLE IF NOT EXISTS events\s*\([\s\S]*?\)\s*ENGINE[\s\S]*?;/.exec(sql)
  if (!match) throw new Error('no CREATE TABLE events statement in the migration')
  return match[0]
}
