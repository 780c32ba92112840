/**
 * Cluster DDL from the single-node migrations (CLICKHOUSE_CLUSTER): the migrations' SQL stays the
 * one description of every table, and this pure transform, with the placement of each table
 * (schemas/clickhouse/cluster-layout.ts), writes the statements a ClickHouse cluster runs instead:
 *
 * - every DDL statement runs `ON CLUSTER`;
 * - a *MergeTree table placed `everywhere` becomes Replicated*MergeTree under a Keeper path without
 *   a shard, so every node holds it whole;
 * - a *MergeTree table placed `sharded` becomes a Replicated*MergeTree `<table>_local` on each shard
 *   (Keeper path per `{shard}`, replica `{replica}`) and a Distributed `<table>` in front of it,
 *   sharded by `cityHash64(<layout key>)`. Readers and writers keep the table's name: they go
 *   through the Distributed table;
 * - a materialized view over a sharded table reads the shard's `_local` table (a view fires where
 *   the block is inserted, and inserts reach the shards' local tables), and writes into the local
 *   table of a target sharded by the same key (its rows belong to the same shard), else into the
 *   Distributed target (which routes them);
 * - ALTERs of a sharded table change the local table, and the Distributed one too for column
 *   changes (it must list the same columns); DROPs drop both.
 *
 * Statements are read with the SQL port's tokenizer (strings, quoted names, comments and brackets
 * as ClickHouse reads them), never with regular expressions over the text. A statement of a form
 * with no known cluster counterpart is refused with a message naming it, so a new migration either
 * gets cluster DDL that was thought about or a failing golden test (test/unit/cluster-ddl.test.ts).
 */
import {
  identifierName,
  isName,
  isPunct,
  isWord,
  Lexer,
  matchingClose,
  type Token,
} from '../../text/sql-tokenizer.ts'
import { CLUSTER_LAYOUT, type TablePlacement } from '../../../schemas/clickhouse/cluster-layout.ts'

export interface ClusterTarget {
  /** The cluster's name in the servers' `remote_servers` configuration. */
  cluster: string
  /** The database every table lives in (the Distributed tables name it). */
  database: string
}

/** How a table was created on the cluster, as later statements need to know it. */
type Placed =
  | { kind: 'sharded'; by: readonly string[] }
  | { kind: 'everywhere' }
  /** Not replicated (Null, views): one of its own on each node. */
  | { kind: 'node' }

/** The tables created so far, in migration order: later statements are rewritten by what they name. */
export class ClusterCatalog {
  private readonly tables = new Map<string, Placed>()
  constructor(private readonly layout: Readonly<Record<string, TablePlacement>> = CLUSTER_LAYOUT) {}

  placementOf(table: string): TablePlacement | undefined {
    return this.layout[table]
  }
  get(table: string): Placed | undefined {
    return this.tables.get(table)
  }
  set(table: string, placed: Placed): void {
    this.tables.set(table, placed)
  }
  delete(table: string): void {
    this.tables.delete(table)
  }
}

export const LOCAL_SUFFIX = '_local'
const IDENTIFIER = /^[A-Za-z_][A-Za-z0-9_]*$/

/** The cluster statements of one migration's statements, given the tables created before it. */
export function clusterStatements(
  statements: readonly string[],
  target: ClusterTarget,
  catalog: ClusterCatalog,
): string[] {
  if (!IDENTIFIER.test(target.cluster)) throw new Error(`invalid cluster name: ${target.cluster}`)
  if (!IDENTIFIER.test(target.database)) throw new Error(`invalid database name: ${target.database}`)
  return statements.flatMap((statement) => clusterStatement(statement, target, catalog))
}

function clusterStatement(sql: string, target: ClusterTarget, catalog: ClusterCatalog): string[] {
  const tokens = tokenize(sql)
  const refuse = (why: string) =>
    new Error(`no cluster form for this statement (${why}): ${sql.slice(0, 120)}`)
  const [first, second] = tokens
  if (isWord(first, 'INSERT')) return [sql]
  if (isWord(first, 'CREATE') && isWord(second, 'TABLE'))
    return createTable(sql, tokens, target, catalog, refuse)
  if (isWord(first, 'CREATE') && isWord(second, 'MATERIALIZED'))
    return createMaterializedView(sql, tokens, target, catalog, refuse)
  if (isWord(first, 'CREATE') && isWord(second, 'VIEW')) {
    const name = nameAfter(tokens, 2, refuse)
    catalog.set(identifierName(tokens[name] as Token), { kind: 'node' })
    return [insertAfter(sql, tokens[name] as Token, ` ON CLUSTER ${target.cluster}`)]
  }
  if (isWord(first, 'ALTER') && isWord(second, 'TABLE'))
    return alterTable(sql, tokens, target, catalog, refuse)
  if (isWord(first, 'DROP') && (isWord(second, 'TABLE') || isWord(second, 'VIEW'))) {
    const at = nameAfter(tokens, 2, refuse)
    const table = identifierName(tokens[at] as Token)
    if (at !== tokens.length - 1) throw refuse('DROP of one table, nothing after its name')
    const placed = catalog.get(table)
    catalog.delete(table)
    const onCluster = ` ON CLUSTER ${target.cluster}`
    if (placed?.kind === 'sharded')
      return [
        `${sql}${onCluster} SYNC`,
        replaceToken(sql, tokens[at] as Token, `${table}${LOCAL_SUFFIX}`) + `${onCluster} SYNC`,
      ]
    return [`${sql}${onCluster}${placed?.kind === 'everywhere' ? ' SYNC' : ''}`]
  }
  throw refuse('only CREATE TABLE / VIEW / MATERIALIZED VIEW, ALTER TABLE, DROP and INSERT have one')
}

type Refuse = (why: string) => Error

function createTable(
  sql: string,
  tokens: Token[],
  target: ClusterTarget,
  catalog: ClusterCatalog,
  refuse: Refuse,
): string[] {
  const at = nameAfter(tokens, 2, refuse)
  const nameToken = tokens[at] as Token
  const table = identifierName(nameToken)
  const columnsOpen = at + 1
  if (!(tokens[columnsOpen]?.kind === 'open' && tokens[columnsOpen]?.text === '('))
    throw refuse('CREATE TABLE with its columns listed')
  const columnsClose = matchingClose(tokens, columnsOpen)
  const engineAt = indexOfWord(tokens, 'ENGINE', columnsClose)
  if (engineAt < 0) throw refuse('CREATE TABLE with an ENGINE clause')
  const engineName = isPunct(tokens[engineAt + 1], '=') ? engineAt + 2 : engineAt + 1
  const engineToken = tokens[engineName]
  if (!engineToken || engineToken.kind !== 'word') throw refuse('an engine name after ENGINE')
  const onCluster = ` ON CLUSTER ${target.cluster}`
  if (!engineToken.text.endsWith('MergeTree')) {
    catalog.set(table, { kind: 'node' })
    return [insertAfter(sql, nameToken, onCluster)]
  }
  if (engineToken.text.startsWith('Replicated')) throw refuse('a single-node engine in the migration')
  const argsOpen = engineName + 1
  const hasArgs = tokens[argsOpen]?.kind === 'open' && tokens[argsOpen]?.text === '('
  const argsClose = hasArgs ? matchingClose(tokens, argsOpen) : -1
  const args = hasArgs
    ? sql.slice((tokens[argsOpen] as Token).end, (tokens[argsClose] as Token).start).trim()
    : ''
  const engineEnd = hasArgs ? (tokens[argsClose] as Token).end : engineToken.end

  const placement = catalog.placementOf(table) ?? {
    placement: 'sharded' as const,
    by: orderByKey(sql, tokens, columnsClose, refuse),
    why: 'default',
  }
  const everywhere = placement.placement === 'everywhere'
  const local = everywhere ? table : `${table}${LOCAL_SUFFIX}`
  const path = everywhere
    ? `/clickhouse/tables/all/{database}/${local}`
    : `/clickhouse/tables/{shard}/{database}/${local}`
  const engine = `Replicated${engineToken.text}('${path}', '{replica}'${args ? `, ${args}` : ''})`
  const localSql =
    sql.slice(0, nameToken.start) +
    local +
    onCluster +
    sql.slice(nameToken.end, engineToken.start) +
    engine +
    sql.slice(engineEnd)
  if (placement.placement === 'everywhere') {
    catalog.set(table, { kind: 'everywhere' })
    return [localSql]
  }
  if (catalog.placementOf(table)) {
    // A layout entry names columns; a typo there would shard by a column that does not exist.
    const columns = columnNames(tokens, columnsOpen, columnsClose)
    for (const column of placement.by) {
      if (!columns.has(column))
        throw new Error(`sharding key of ${table} names ${column}, not one of its columns`)
    }
  }
  catalog.set(table, { kind: 'sharded', by: placement.by })
  const ifNotExists = isWord(tokens[2], 'IF') ? 'IF NOT EXISTS ' : ''
  const distributed =
    `CREATE TABLE ${ifNotExists}${table}${onCluster} AS ${local}\n` +
    `ENGINE = Distributed('${target.cluster}', '${target.database}', '${local}', cityHash64(${placement.by.join(', ')}))`
  return [localSql, distributed]
}

function createMaterializedView(
  sql: string,
  tokens: Token[],
  target: ClusterTarget,
  catalog: ClusterCatalog,
  refuse: Refuse,
): string[] {
  if (!isWord(tokens[2], 'VIEW')) throw refuse('CREATE MATERIALIZED VIEW')
  const at = nameAfter(tokens, 3, refuse)
  const nameToken = tokens[at] as Token
  if (!isWord(tokens[at + 1], 'TO')) throw refuse('a materialized view writes TO a table of its own')
  const targetToken = tokens[at + 2]
  if (!isName(targetToken) || isPunct(tokens[at + 3], '.')) throw refuse('an unqualified TO table')
  const as = indexOfWord(tokens, 'AS', at + 3)
  const from = as < 0 ? -1 : indexOfWord(tokens, 'FROM', as)
  const sourceToken = tokens[from + 1]
  if (from < 0 || !isName(sourceToken) || isPunct(tokens[from + 2], '.'))
    throw refuse('a view over one unqualified table')
  const source = catalog.get(identifierName(sourceToken as Token))
  const to = identifierName(targetToken as Token)
  const toPlaced = catalog.get(to)
  const edits: Edit[] = [{ at: nameToken.end, remove: 0, text: ` ON CLUSTER ${target.cluster}` }]
  if (source?.kind === 'sharded') {
    const sourceLocal = `${identifierName(sourceToken as Token)}${LOCAL_SUFFIX}`
    edits.push({
      at: (sourceToken as Token).start,
      remove: (sourceToken as Token).text.length,
      text: sourceLocal,
    })
    if (toPlaced?.kind === 'sharded' && sameKey(toPlaced.by, source.by))
      edits.push({
        at: (targetToken as Token).start,
        remove: (targetToken as Token).text.length,
        text: `${to}${LOCAL_SUFFIX}`,
      })
  }
  catalog.set(identifierName(nameToken), { kind: 'node' })
  return [applyEdits(sql, edits)]
}

/** Actions a Distributed table takes as well: it must list the same columns as its local table. */
const COLUMN_ACTIONS = new Set(['ADD', 'DROP', 'MODIFY', 'RENAME', 'COMMENT'])

function alterTable(
  sql: string,
  tokens: Token[],
  target: ClusterTarget,
  catalog: ClusterCatalog,
  refuse: Refuse,
): string[] {
  const at = nameAfter(tokens, 2, refuse)
  const nameToken = tokens[at] as Token
  const table = identifierName(nameToken)
  const onCluster = ` ON CLUSTER ${target.cluster}`
  const placed = catalog.get(table)
  if (placed?.kind !== 'sharded') return [insertAfter(sql, nameToken, onCluster)]
  const localSql =
    sql.slice(0, nameToken.start) + `${table}${LOCAL_SUFFIX}` + onCluster + sql.slice(nameToken.end)
  // The actions, split at top-level commas, up to a trailing SETTINGS clause (the statement's).
  const settingsAt = indexOfWord(tokens, 'SETTINGS', at + 1)
  const end = settingsAt < 0 ? tokens.length : settingsAt
  const actions: { first: number; last: number }[] = []
  let first = at + 1
  for (let i = at + 1; i <= end; i++) {
    if (i === end || (isPunct(tokens[i], ',') && (tokens[i] as Token).depth === 0)) {
      if (i > first) actions.push({ first, last: i - 1 })
      first = i + 1
    }
  }
  const columnActions = actions.filter(
    (a) =>
      COLUMN_ACTIONS.has((tokens[a.first] as Token).text.toUpperCase()) &&
      isWord(tokens[a.first + 1], 'COLUMN'),
  )
  if (columnActions.length === 0) return [localSql]
  const distributed = columnActions
    .map((a) => sql.slice((tokens[a.first] as Token).start, (tokens[a.last] as Token).end))
    .join(', ')
  return [localSql, `ALTER TABLE ${table}${onCluster} ${distributed}`]
}

// --- reading tokens ---------------------------------------------------------------------------

function tokenize(sql: string): Token[] {
  const lexer = new Lexer(sql)
  const tokens: Token[] = []
  for (let t = lexer.next(); t; t = lexer.next()) tokens.push(t)
  while (tokens.at(-1)?.kind === 'semicolon') tokens.pop()
  if (tokens.some((t) => t.kind === 'semicolon'))
    throw new Error(`one statement at a time: ${sql.slice(0, 120)}`)
  return tokens
}

/** The index of the object's name after `IF [NOT] EXISTS` (if any) from `from`; names are unqualified. */
function nameAfter(tokens: Token[], from: number, refuse: Refuse): number {
  let at = from
  if (isWord(tokens[at], 'IF')) {
    at++
    if (isWord(tokens[at], 'NOT')) at++
    if (!isWord(tokens[at], 'EXISTS')) throw refuse('IF [NOT] EXISTS')
    at++
  }
  if (!isName(tokens[at])) throw refuse('a name')
  if (isPunct(tokens[at + 1], '.')) throw refuse('an unqualified name: the database is the connection’s')
  return at
}

function indexOfWord(tokens: Token[], word: string, from: number): number {
  for (let i = from; i < tokens.length; i++) {
    const t = tokens[i] as Token
    if (t.depth === 0 && isWord(t, word)) return i
  }
  return -1
}

/** The column names of a CREATE TABLE's list (not its INDEX, PROJECTION or CONSTRAINT entries). */
function columnNames(tokens: Token[], open: number, close: number): Set<string> {
  const names = new Set<string>()
  const depth = (tokens[open] as Token).depth + 1
  let startOfEntry = true
  for (let i = open + 1; i < close; i++) {
    const t = tokens[i] as Token
    if (startOfEntry && isName(t) && !['INDEX', 'PROJECTION', 'CONSTRAINT'].includes(t.text.toUpperCase()))
      names.add(identifierName(t))
    startOfEntry = isPunct(t, ',') && t.depth === depth
  }
  return names
}

const CLAUSES = ['PARTITION', 'PRIMARY', 'SAMPLE', 'TTL', 'SETTINGS', 'COMMENT', 'ORDER']

/** The ORDER BY expressions of a table, as a default sharding key. */
function orderByKey(sql: string, tokens: Token[], from: number, refuse: Refuse): string[] {
  const order = indexOfWord(tokens, 'ORDER', from)
  if (order < 0 || !isWord(tokens[order + 1], 'BY')) throw refuse('an ORDER BY to shard by')
  let end = order + 2
  while (
    end < tokens.length &&
    !CLAUSES.some((c) => isWord(tokens[end], c) && (tokens[end] as Token).depth === 0)
  )
    end++
  const firstToken = tokens[order + 2] as Token
  const lastToken = tokens[end - 1] as Token
  let text = sql.slice(firstToken.start, lastToken.end)
  if (firstToken.text === '(' && matchingClose(tokens, order + 2) === end - 1)
    text = sql.slice(firstToken.end, lastToken.start)
  const key = splitTopLevel(text)
  if (key.length === 0 || /^tuple\s*\(\s*\)$/i.test(text.trim())) throw refuse('an ORDER BY key to shard by')
  return key
}

/** `a, f(b, c)` → ['a', 'f(b, c)']: commas outside brackets and strings. */
function splitTopLevel(text: string): string[] {
  const tokens = tokenize(text)
  const parts: string[] = []
  let start = 0
  for (const t of tokens) {
    if (isPunct(t, ',') && t.depth === 0) {
      parts.push(text.slice(start, t.start).trim())
      start = t.end
    }
  }
  parts.push(text.slice(start).trim())
  return parts.filter((p) => p.length > 0)
}

const sameKey = (a: readonly string[], b: readonly string[]) =>
  a.length === b.length && a.every((v, i) => v === b[i])

// --- writing ---------------------------------------------------------------------------------

interface Edit {
  at: number
  remove: number
  text: string
}

function applyEdits(sql: string, edits: Edit[]): string {
  let out = sql
  for (const edit of [...edits].sort((a, b) => b.at - a.at))
    out = out.slice(0, edit.at) + edit.text + out.slice(edit.at + edit.remove)
  return out
}

const insertAfter = (sql: string, token: Token, text: string) =>
  applyEdits(sql, [{ at: token.end, remove: 0, text }])
const replaceToken = (sql: string, token: Token, text: string) =>
  applyEdits(sql, [{ at: token.start, remove: token.text.length, text }])
