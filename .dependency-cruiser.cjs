// The import graph's rules, checked by `npm run lint:imports` (part of `npm test`): no module
// imports itself through others, schemas/ (wire formats) imports nothing of pipelines/ or
// services/, and pipelines/ (the flows and their adapters) imports nothing of services/ (the
// processes that wire them). A violation is printed with the whole path of the circle or the
// import at fault.
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
    {
      name: 'pipelines-below-services',
      severity: 'error',
      comment: 'pipelines/ holds the flows and adapters; only services/ (the composition roots) wires them.',
      from: { path: '^pipelines/' },
      to: { path: '^services/' },
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
