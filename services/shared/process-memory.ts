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
 * no measured CPU cost (measured at `3d76a78`; docs/performance.md, "Memory").
 */
export const MALLOC_ARENA_MAX = '2'

/**
 * V8's young generation: each isolate (the main thread, each CPU-pool thread) keeps two semi-spaces
 * that grow to 16 MB each under allocation-heavy work and stay resident. Capped
 * (`--max-semi-space-size` for the main thread, `resourceLimits` for the pool's threads): at 4 MB
 * for every isolate, V8's pages in the sustained scenario went from 252-272 MB to 176-193 MB, for
 * ~1 µs more CPU per event (measured at `ee39b27`; docs/performance.md, "Memory"). The main
 * thread's cap is 8 MB (`6728aa2`): at 4 MB an upload's objects, alive for the 4-6 ms it waits for
 * its commit, were still alive at nearly every scavenge (~45 % survived, each pause ~1 ms), and the
 * edge took plain uploads at 0.64-0.74 of the edge floor's rate where 8 MB (or 16) gave 0.88-0.90
 * with 0.2 of a core less CPU.
 */
export const MAIN_SEMI_SPACE_MB = 8
export const WORKER_SEMI_SPACE_MB = 4

/** Node flags the main thread must be started with (its heap is configured before any code runs). */
export const NODE_MEMORY_FLAGS: readonly string[] = [`--max-semi-space-size=${MAIN_SEMI_SPACE_MB}`]

/** resourceLimits of Sluice's worker threads: V8 sizes a young generation as 3 semi-spaces. */
export const WORKER_RESOURCE_LIMITS = { maxYoungGenerationSizeMb: 3 * WORKER_SEMI_SPACE_MB } as const

/** `env` with the memory settings a Sluice process starts with; an operator's own values win. */
export function withProcessMemorySettings(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return { ...env, MALLOC_ARENA_MAX: env.MALLOC_ARENA_MAX ?? MALLOC_ARENA_MAX }
}

/**
 * A line for the start-up log when this process was started without them (node run by hand), or
 * undefined. `arenaMax` is the process's MALLOC_ARENA_MAX (config; only glibc, on Linux, reads
 * it); `nodeFlags` the flags node was started with (process.execArgv and NODE_OPTIONS).
 */
export function processMemoryWarning(
  arenaMax: string | undefined,
  nodeFlags: readonly string[],
  platform: NodeJS.Platform = process.platform,
): string | undefined {
  const missing: string[] = []
  if (platform === 'linux' && arenaMax === undefined) missing.push(`MALLOC_ARENA_MAX=${MALLOC_ARENA_MAX}`)
  if (!nodeFlags.some((flag) => /^--max[-_]semi[-_]space[-_]size(=|$)/.test(flag)))
    missing.push(...NODE_MEMORY_FLAGS)
  if (missing.length === 0) return undefined
  return (
    `started without ${missing.join(' and ')}: up to ~150 MB more resident under load ` +
    `(glibc's malloc arenas, V8's young generation); bin/sluice.js, npm start and the Docker ` +
    `image set them: see docs/memory.md`
  )
}

/** The node flags this process was started with: its command line's and NODE_OPTIONS'. */
export function currentNodeFlags(): string[] {
  return [...process.execArgv, ...(process.env.NODE_OPTIONS ?? '').split(/\s+/).filter(Boolean)]
}
