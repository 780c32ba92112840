import { copyFile, mkdir, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { migrate, MIGRATIONS_DIR } from '../../pipelines/connectors/store/migrations.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { tempDir } from './temp.ts'

/**
 * A chdb store in a directory of its own with every migration applied, and its clean-up. With
 * `before`, only the migrations numbered below it: a store as an older Sluice left it, for tests
 * of what a migration does to rows stored before it (the test then runs `migrate(store)`).
 */
export async function openMigratedChdb(
  name: string,
  options: { before?: number } = {},
): Promise<{ store: ChdbStore; cleanup: () => Promise<void> }> {
  const dir = await tempDir(name)
  let store: ChdbStore
  if (options.before === undefined) {
    store = await ChdbStore.open(dir.path)
    await migrate(store)
  } else {
    const older = join(dir.path, 'migrations-before')
    await mkdir(older)
    for (const file of await readdir(MIGRATIONS_DIR))
      if (/^\d{3}_.*\.sql$/.test(file) && Number.parseInt(file, 10) < options.before)
        await copyFile(join(MIGRATIONS_DIR, file), join(older, file))
    store = await ChdbStore.open(join(dir.path, 'clickhouse'))
    await migrate(store, older)
  }
  return {
    store,
    cleanup: async () => {
      await store.close()
      await dir.cleanup()
    },
  }
}
