import { migrate } from '../../pipelines/connectors/store/migrations.ts'
import { ChdbStore } from '../../pipelines/connectors/store/chdb-store.ts'
import { tempDir } from './temp.ts'

/** A chdb store in a directory of its own with every migration applied, and its clean-up. */
export async function openMigratedChdb(
  name: string,
): Promise<{ store: ChdbStore; cleanup: () => Promise<void> }> {
  const dir = await tempDir(name)
  const store = await ChdbStore.open(dir.path)
  await migrate(store)
  return {
    store,
    cleanup: async () => {
      await store.close()
      await dir.cleanup()
    },
  }
}
