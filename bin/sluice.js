#!/usr/bin/env node
// Sluice is TypeScript run by tsx (no build step); worker threads get the same loader via execArgv.
import { register } from 'tsx/esm/api'

register()
await import('../services/cli.ts')
