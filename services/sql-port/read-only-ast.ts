/**
 * The read-only port's rules over the engine's own parse tree (`EXPLAIN AST`, read as TabSeparated:
 * one row per node, so no name or alias can fake a row). Pure: no I/O.
 *
 * What readonly=1 on the analysts' connection leaves open, measured on chdb 3.4.0 (ClickHouse 26.7):
 * - a SETTINGS clause inside a subquery, a CTE, `view(…)`, `IN (…)` or a non-last UNION arm is
 *   applied without the readonly check: `SELECT * FROM (SELECT … FROM file(…) SETTINGS readonly = 0)`
 *   reads the file. Only the statement's own settings are checked by the engine;
 * - the `file()` function (not the table function) reads a server file;
 * - table functions the engine marks `allow_readonly`: `cluster`, `clusterAllReplicas`, `input`,
 *   `fuzzJSON`, `eval` (runs a query built at run time), `mergeTree*`, `viewIfPermitted`, …
 * - DESCRIBE of a table function reads the source to infer its schema.
 * INTO OUTFILE is the classifier's (a Control statement), not this module's.
 */

export interface AstNode {
  /** Node type as the engine prints it: SelectQuery, Function, Set, TableExpression, … */
  readonly type: string
  /** For a Function: its name as the engine resolved it (escapes decoded); '' otherwise. */
  readonly name: string
  readonly children: AstNode[]
}

/**
 * Table functions an analyst may use: they read nothing outside the engine's own tables (and the
 * engine allows them under readonly=1; `format` and `FROM (EXPLAIN …)` it does not).
 */
const SAFE_TABLE_FUNCTIONS: ReadonlySet<string> = new Set(
  [
    'numbers',
    'numbers_mt',
    'zeros',
    'zeros_mt',
    'generate_series',
    'generateSeries',
    'primes',
    'values',
    'SQLStandardValues', // what the parser makes of `FROM (VALUES …)`
    'null',
    'view',
    'merge',
    'generateRandom',
  ].map((n) => n.toLowerCase()),
)

/** Ordinary functions that reach outside the engine: file() reads a server file, catboostEvaluate loads a model file through a helper process. */
const DENIED_FUNCTIONS: ReadonlySet<string> = new Set(['file', 'catboostevaluate'])

/**
 * The tree of `EXPLAIN AST` output in TabSeparated (escaped) form: one node per line, indented by one
 * space per level. Undefined for an empty answer.
 */
export function parseExplainAst(tsv: string): AstNode | undefined {
  const stack: { depth: number; node: AstNode }[] = []
  let root: AstNode | undefined
  for (const line of tsv.split('\n')) {
    if (line.trim() === '') continue
    const depth = line.length - line.trimStart().length
    const node = parseRow(line.trimStart())
    while (stack.length > 0 && (stack.at(-1) as { depth: number }).depth >= depth) stack.pop()
    const parent = stack.at(-1)
    if (parent) parent.node.children.push(node)
    else if (!root) root = node
    else throw new Error('EXPLAIN AST answered more than one root')
    stack.push({ depth, node })
  }
  return root
}

function parseRow(row: string): AstNode {
  const space = row.indexOf(' ')
  const type = space === -1 ? row : row.slice(0, space)
  let name = ''
  if (type === 'Function' && space !== -1) {
    // `Function name`, then ` (alias a)` and ` (children n)` when present.
    const rest = row.slice(space + 1)
    const cut = rest.indexOf(' (')
    name = unescapeTsv(cut === -1 ? rest : rest.slice(0, cut))
  }
  return { type, name, children: [] }
}

const TSV_ESCAPES: Record<string, string> = {
  n: '\n',
  t: '\t',
  r: '\r',
  b: '\b',
  f: '\f',
  '0': '\0',
  '\\': '\\',
  "'": "'",
}

function unescapeTsv(text: string): string {
  return text.replace(/\\(.)/g, (whole, c: string) => TSV_ESCAPES[c] ?? whole)
}

/**
 * Why the read-only port refuses the statement whose tree this is, or undefined. `tableFunctions`
 * holds every table function the engine knows (lower case): one of those that is not in
 * SAFE_TABLE_FUNCTIONS is refused wherever it appears, so a table function added by a later engine
 * is refused until it is reviewed.
 */
export function astRefusal(root: AstNode, tableFunctions: ReadonlySet<string>): string | undefined {
  const allowedSettings = ownSettingsNodes(root)
  const visit = (node: AstNode): string | undefined => {
    if (node.type === 'Set' && !allowedSettings.has(node)) {
      return 'a SETTINGS clause is only allowed at the end of the statement on this port'
    }
    if (node.type === 'Function') {
      const name = node.name.toLowerCase()
      if (DENIED_FUNCTIONS.has(name)) return `the ${node.name} function is not allowed on this port`
      if (tableFunctions.has(name) && !SAFE_TABLE_FUNCTIONS.has(name)) {
        return `the ${node.name} table function is not allowed on this port`
      }
    }
    for (const child of node.children) {
      const why = visit(child)
      if (why) return why
    }
    return undefined
  }
  return visit(root)
}

/**
 * The SETTINGS nodes the engine itself checks against readonly (measured): those right under the
 * statement (after FORMAT, of DESCRIBE, SHOW, EXISTS, an EXPLAIN's own options), and that of the last
 * SELECT of the statement's UNION, also under EXPLAIN. A SETTINGS of an earlier UNION arm is applied
 * unchecked.
 */
function ownSettingsNodes(root: AstNode): Set<AstNode> {
  const own = new Set<AstNode>(root.children.filter((c) => c.type === 'Set'))
  const union =
    root.type === 'SelectWithUnionQuery'
      ? root
      : root.type === 'Explain'
        ? root.children.find((c) => c.type === 'SelectWithUnionQuery')
        : undefined
  const arms = union?.children.find((c) => c.type === 'ExpressionList')
  const last = arms?.children.at(-1)
  if (last?.type === 'SelectQuery') for (const c of last.children) if (c.type === 'Set') own.add(c)
  return own
}
