import type { Store } from '../../pipelines/connectors/store/store.ts'

/** The store, with every command it is asked to run noted in order. */
export function recording(store: Store): { store: Store; commands: string[] } {
  const commands: string[] = []
  const proxy = new Proxy(store, {
    get(target, key, receiver) {
      if (key === 'command')
        return (sql: string, params?: Record<string, unknown>) => {
          commands.push(sql)
          return target.command(sql, params)
        }
      const value = Reflect.get(target, key, receiver) as unknown
      return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value
    },
  })
  return { store: proxy, commands }
}
