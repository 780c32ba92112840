import { readdir, readFile } from 'node:fs/promises'
import { join } from 'node:path'

/**
 * Every line the file transport wrote for one app, oldest day first. The transport starts a file
 * per UTC day, so a test that runs across midnight finds its lines in two files.
 */
export async function pushFileLines<T>(appDir: string): Promise<T[]> {
  const days = (await readdir(appDir).catch(() => [] as string[])).filter((f) => f.endsWith('.jsonl')).sort()
  const lines: T[] = []
  for (const day of days) {
    const text = await readFile(join(appDir, day), 'utf8')
    for (const line of text.split('\n')) if (line) lines.push(JSON.parse(line) as T)
  }
  return lines
}
