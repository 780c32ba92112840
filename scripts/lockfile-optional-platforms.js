#!/usr/bin/env node
// `npm ci` refuses a lock file that names optional platform packages (chdb's and msgpackr's
// prebuilt binaries for other systems) without entries for them. The registry mirror this project
// is developed against serves only the linux-x64 builds, so `npm install` cannot write those
// entries; this adds them, marked optional with their os/cpu, so every platform skips the ones
// that are not its own. Run it after changing dependencies.
import { readFileSync, writeFileSync } from 'node:fs'

const path = new URL('../package-lock.json', import.meta.url)
const lock = JSON.parse(readFileSync(path, 'utf8'))
const added = []
for (const meta of Object.values(lock.packages)) {
  for (const [name, spec] of Object.entries(meta.optionalDependencies ?? {})) {
    const key = `node_modules/${name}`
    const platform = /(darwin|linux|win32|freebsd)-(arm64|x64|arm|ia32)/.exec(name)
    if (lock.packages[key] || !platform) continue
    lock.packages[key] = {
      version: spec.replace(/^[\^~]/, ''),
      optional: true,
      os: [platform[1]],
      cpu: [platform[2]],
      ...(name.endsWith('-gnu') ? { libc: ['glibc'] } : {}),
    }
    added.push(name)
  }
}
writeFileSync(path, JSON.stringify(lock, null, 2) + '\n')
console.log(added.length > 0 ? `added lock entries: ${added.join(', ')}` : 'lock file already complete')
