import { readdirSync, readFileSync } from 'node:fs'
import { join, relative } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { CONFIGURATION_DOC, renderConfigurationDoc } from '../../scripts/config-docs.ts'
import { configSchema } from '../../services/config.ts'

const ROOT = fileURLToPath(new URL('../..', import.meta.url))

/** Where Sluice's code is: every variable these read is a setting of the schema, or listed below. */
const CODE_DIRS = ['services', 'pipelines', 'schemas', 'bin', 'bench', 'scripts']
/** Files outside them that set Sluice's variables for the processes they start. */
const CODE_FILES = ['Dockerfile', 'docker-compose.yml']

/** Variables the code reads that are not Sluice's settings, and why. */
const NOT_SETTINGS: Record<string, string> = {
  JE_MALLOC_CONF: "read by chdb's allocator (jemalloc); bin/sluice.js only gives it a default",
  NODE_OPTIONS: "node's own; read to tell whether node was started with the memory flags",
  UV_THREADPOOL_SIZE: "libuv's own; read to size what runs on libuv's threads",
  XDG_CACHE_HOME: "the user's cache directory, where the bench keeps generated data",
  SLUICE_BENCH_CACHE_DIR: 'the bench harness: where it keeps generated data between runs',
  SLUICE_SETTINGS: 'a constant of the bench (the settings it starts Sluice with), not a variable',
}

function codeFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && /\.(ts|js|mjs)$/.test(entry.name))
    .map((entry) => join(entry.parentPath, entry.name))
    .filter((path) => !relative(ROOT, path).startsWith(join('bench', 'results')))
}

const READS = [
  /process\.env\.([A-Z_][A-Z0-9_]*)/g,
  /process\.env\[['"]([A-Z_][A-Z0-9_]*)['"]\]/g,
  /\benv\.([A-Z_][A-Z0-9_]*)/g,
  /\benv\[['"]([A-Z_][A-Z0-9_]*)['"]\]/g,
  // Any name of Sluice's own, wherever it appears: a variable set for a child process, in a message.
  /\b(SLUICE_[A-Z0-9_]+)/g,
]

/** Each variable name the code reads or sets, with the first file that does. */
function variablesInCode(): Map<string, string> {
  const found = new Map<string, string>()
  const files = [...CODE_DIRS.flatMap(codeFiles), ...CODE_FILES.map((file) => join(ROOT, file))]
  for (const file of files) {
    const text = readFileSync(file, 'utf8')
    for (const pattern of READS)
      for (const [, name] of text.matchAll(pattern))
        if (name !== undefined && !found.has(name)) found.set(name, relative(ROOT, file))
  }
  return found
}

describe('docs/configuration.md', () => {
  it('is what `npm run docs:config` writes from the schema now', () => {
    const page = readFileSync(CONFIGURATION_DOC, 'utf8')
    expect(page, 'docs/configuration.md is stale: run `npm run docs:config`').toBe(renderConfigurationDoc())
    // Every setting has its row, with its default as the schema parses it.
    for (const name of Object.keys(configSchema.shape)) expect(page).toContain(`| \`${name}\` |`)
    expect(page).toContain('| `PORT` | integer 0–65535 | `8080` |')
    expect(page).toContain('| `SLUICE_UPLOAD_MAX_BYTES` | integer ≥ 1 | `262144` (256 KiB) |')
  })

  it('documents every variable the code reads', () => {
    const found = variablesInCode()
    // The scan sees the reads it should: a setting, a setting read by its bench, an external one.
    expect(found.get('SLUICE_URL')).toBe('services/cli.ts')
    expect(found.has('CLICKHOUSE_URL') && found.has('UV_THREADPOOL_SIZE')).toBe(true)
    const settings = new Set(Object.keys(configSchema.shape))
    const undocumented = [...found]
      .filter(([name]) => !settings.has(name) && !(name in NOT_SETTINGS))
      .map(([name, file]) => `${name} (${file})`)
    expect(undocumented, 'add these to services/config.ts, or to NOT_SETTINGS with the reason').toEqual([])
    // An exception that nothing reads any more is stale.
    expect(Object.keys(NOT_SETTINGS).filter((name) => !found.has(name))).toEqual([])
  })
})
