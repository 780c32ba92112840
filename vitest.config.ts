import { defineConfig } from 'vitest/config'

// chdb binds one engine per process, so every test file runs in its own forked process.
export default defineConfig({
  test: {
    pool: 'forks',
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 120_000,
    maxWorkers: 2,
    globalSetup: ['test/helpers/global-setup.ts'],
    // The JSON report lets .ci/run close with a plain "N passed, N failed" line.
    reporters: ['default', 'json'],
    outputFile: { json: '.vitest-results.json' },
  },
})
