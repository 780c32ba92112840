import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { Session } from 'chdb'
import { QueryClass } from 'chdb/durable'

export { QueryClass }

/** What ClickHouse's own parser says about a text, without running any of it. */
export interface StatementClass {
  /** Executable statements in the text (`PARALLEL WITH` arms count apart); 0 when it does not parse. */
  statements: number
  /**
   * ReadOnly: SELECT, SHOW, DESCRIBE, EXPLAIN, EXISTS. Mutating: INSERT, CREATE, ALTER, DROP, …
   * MutatingGlobal: functions, named collections, access entities. Control: USE, SET, SYSTEM, KILL,
   * and anything that writes outside the engine (INTO OUTFILE). Unknown: did not parse. A text of
   * several statements takes the most restricted class among them.
   */
  queryClass: QueryClass
}

interface ClassifyBinding {
  DurableClassifyAsync(
    connection: unknown,
    sql: string,
    targetDatabase: string | null,
  ): Promise<{ statementCount: number; queryClass: number }>
}

let binding: ClassifyBinding | undefined

/**
 * chdb 3.4.0's addon binds the engine's `chdb_classify_query_n` (its `chdb/durable` layer uses it to
 * tell read-only statements from writes) but exports it only through that layer, which needs an
 * engine of its own. This loads the addon through chdb's own loader, so it is the very module the
 * `chdb` package already loaded, and refuses to go on without the binding: there is no fallback that
 * would leave the engine's check out.
 */
function classifyBinding(): ClassifyBinding {
  if (binding) return binding
  const require = createRequire(import.meta.url)
  const root = dirname(require.resolve('chdb/package.json'))
  const loader = require(join(root, 'dist', 'loader.js')) as { loadNative(): unknown }
  const native = loader.loadNative() as Partial<ClassifyBinding>
  if (typeof native.DurableClassifyAsync !== 'function') {
    throw new Error(
      'the loaded chdb addon has no DurableClassifyAsync (chdb_classify_query_n); Sluice needs chdb 3.4.0 exactly',
    )
  }
  binding = native as ClassifyBinding
  return binding
}

/**
 * Classifies `sql` with the engine's parser on `session`'s connection (off the event loop). Nothing
 * in the text runs. `database` is the connection's current database, against which unqualified
 * names are judged.
 */
export async function classifyStatement(
  session: Session,
  sql: string,
  database: string,
): Promise<StatementClass> {
  const out = await classifyBinding().DurableClassifyAsync(session.connection, sql, database)
  const known = Object.values(QueryClass).includes(out.queryClass)
  return {
    statements: out.statementCount,
    // A class this build has no name for fails closed.
    queryClass: known ? out.queryClass : QueryClass.Unknown,
  }
}
