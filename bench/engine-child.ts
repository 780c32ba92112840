import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Progress } from './progress.ts'

/**
 * Runs one of the bench's engine scripts (`bench/scenarios/*-engine.ts`) in a child process of its
 * own: chdb binds one data directory per process, and a scenario's Sluice or engine must not share
 * the bench's. The child reports progress as lines on stderr (shown as the step's phase) and its
 * result as the last line of stdout, a JSON object; anything else is a failure that quotes the end
 * of its output. The child is killed if the bench leaves early.
 */
export async function runEngineChild<T>(o: {
  /** The script, relative to bench/scenarios/ (e.g. './push-engine.ts'). */
  script: string
  args: readonly (string | number)[]
  /** What the progress line calls the step, and the error calls the engine. */
  label: string
  what: string
  progress: Progress
  env?: NodeJS.ProcessEnv
}): Promise<T> {
  const here = fileURLToPath(new URL(o.script, new URL('./scenarios/', import.meta.url)))
  const child = spawn(
    process.execPath,
    ['--import', import.meta.resolve('tsx'), here, ...o.args.map(String)],
    {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(o.env && { env: o.env }),
    },
  )
  let out = ''
  let err = ''
  let phase = 'starting'
  child.stdout.on('data', (d: Buffer) => (out += d.toString()))
  child.stderr.on('data', (d: Buffer) => {
    err += d.toString()
    // A chatty engine (a log line per batch) must not grow the bench's memory.
    if (err.length > 1_000_000) err = err.slice(-100_000)
    phase = err.trim().split('\n').pop() ?? phase
  })
  o.progress.start(o.label, () => phase)
  try {
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve))
    const line = out.trim().split('\n').pop() ?? ''
    if (code !== 0 || !line.startsWith('{'))
      throw new Error(`${o.what} failed (${code}): ${(err || out).slice(-2000)}`)
    return JSON.parse(line) as T
  } finally {
    o.progress.stop()
    if (child.exitCode === null) child.kill('SIGKILL')
  }
}
