/**
 * Memory settings a Sluice process must be started with, because what reads them reads them once,
 * when the process starts: glibc's malloc reads MALLOC_ARENA_MAX before any JavaScript runs, so it
 * cannot be set from inside. `bin/sluice.js` run directly, `npm start`, the Dockerfile and the
 * bench's launcher all start Sluice with these; an operator who starts node themselves must set
 * them too (docs/memory.md).
 */

/**
 * glibc gives each thread that allocates while another holds the main arena an arena of its own,
 * up to 8 per core, each growing in 64 MB heaps it rarely hands back. Sluice's process has a
 * dozen such threads (libuv's pool, V8's helpers, the CPU pool, chdb's callers): 2 arenas took
 * the anonymous memory in 2-64 MB mappings from 105-154 MB to 71-83 MB in the overload scenario at
 * no measured CPU cost (bench/README.md, "Session 8 — memory").
 */
export const MALLOC_ARENA_MAX = '2'

/** `env` with the memory settings a Sluice process starts with; an operator's own values win. */
export function withProcessMemorySettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX ?? MALLOC_ARENA_MAX }
}

/**
 * A line for the start-up log when this process was started without them (node run by hand), or
 * undefined. `arenaMax` is the process's MALLOC_ARENA_MAX (config); only glibc (Linux) reads it.
 */
export function processMemoryWarning(
  arenaMax: string | undefined,
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  if (platform !== 'linux' || arenaMax !== undefined) return undefined
  return (
    `MALLOC_ARENA_MAX is not set: glibc may give this process up to 8 malloc arenas per core ` +
    `(~50-80 MB more resident under load); start Sluice with MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX} ` +
    `(bin/sluice.js, npm start and the Docker image do; see docs/memory.md)`
  )
}
