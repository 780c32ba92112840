import { defineConfig } from 'vitest/config'

// chdb binds one engine per process, so every test file runs in its own forked process.
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    // Whole-contract scenarios take 10-30 s on an idle 2-core machine and several times that when
    // the machine is shared; a hang still fails within two minutes.
    testTimeout: 120_000,
    hookTimeout: 120_000,
    maxWorkers: 2,
    globalSetup: ['test/helpers/global-setup.ts'],
    // The JSON report lets .ci/run close with a plain "N passed, N failed" line.
    reporters: ['default', 'json'],
    outputFile: { json: '.vitest-results.json' },
  },
})
