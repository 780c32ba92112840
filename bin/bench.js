#!/usr/bin/env node
// The bench suite (npm run bench): TypeScript run by tsx, like bin/sluice.js.
import { register } from 'tsx/esm/api'

register()
await import('../bench/cli.ts')
