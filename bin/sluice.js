#!/bin/sh
':' //; exec env MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}" node --max-semi-space-size=8 "$0" "$@"
// Run directly (`bin/sluice.js start`), the line above is shell: it sets glibc's MALLOC_ARENA_MAX
// unless the operator did, and execs node with V8's semi-space cap in place of the shell (same
// PID, signals straight to node); both are read once, when the process starts, so they cannot be
// set from here. To node the line is a string and a comment. services/shared/process-memory.ts
// holds the values (a test keeps them equal); docs/memory.md: what to set when starting node yourself.
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
