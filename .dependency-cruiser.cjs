// The import graph's rules, checked by `npm run lint:imports` (part of `npm test`): no module
// imports itself through others, and schemas/ (wire formats) imports nothing of pipelines/ or
// services/. A violation is printed with the whole path of the circle or the import at fault.
// (pipelines/ below services/ is not a rule yet: pipelines/connectors/store/cluster-ddl.ts reads
// services/sql-port/sql-tokenizer.ts, which belongs below both.)
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: 'no-circular',
      severity: 'error',
      comment:
        'A module that imports itself through others: move what both need to a module below them, or pass it in.',
      from: {},
      to: { circular: true },
    },
    {
      name: 'schemas-below-pipelines-and-services',
      severity: 'error',
      comment: 'schemas/ describes wire formats: it imports nothing of pipelines/ or services/.',
      from: { path: '^schemas/' },
      to: { path: '^(pipelines|services)/' },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsConfig: { fileName: 'tsconfig.json' },
    // Type-only imports count: a circle of types is still a circle to a reader.
    tsPreCompilationDeps: true,
    enhancedResolveOptions: { extensions: ['.ts', '.js'] },
  },
}
