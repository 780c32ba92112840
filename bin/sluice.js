#!/usr/bin/env node
// Sluice is TypeScript run by tsx (no build step); worker threads get the same loader via execArgv.
import { register } from 'tsx/esm/api'

// chdb's allocator (jemalloc) keeps freed pages for 5 s by default; 1 s returns them sooner at no
// measured cost (~20-30 MB less resident under inserts). Read once, when chdb loads: set it here,
// before anything imports chdb, and leave an operator's own setting alone.
process.env.JE_MALLOC_CONF ??= 'dirty_decay_ms:1000'

register()
// Node's own threads, noted before anything else runs, so the CPU split by kind of thread
// (/metrics, the bench) tells them from the engine's.
const { noteNodeThreads } = await import('../services/shared/thread-cpu.ts')
await noteNodeThreads()
await import('../services/cli.ts')
