import type { Store } from '../../pipelines/connectors/store/store.ts'
import { hashSecret } from '../../services/control/credentials.ts'

/**
 * Orgs, apps and keys exactly as Sluice wrote them before the control plane took commands (the
 * ControlStore of migration 009's time allocated max + 1 itself and inserted these rows): for
 * upgrade tests of a data directory, or a ClickHouse database, written by that version.
 */
export const OLD = {
  orgs: [
    { id: 1, name: 'Acme', profiledb_id: 1 },
    { id: 2, name: 'Beta', profiledb_id: 3 },
    { id: 3, name: 'Gamma', profiledb_id: 4 },
  ],
  app: { app_id: 'acme-ios', org_id: 1, name: 'Acme iOS', profiledb_id: 2 },
  key: {
    org_id: 1,
    api_key: 'a0a0a0a0a0a0a0a0a0a0a0a0',
    api_secret: 'old-secret-that-still-works-0123456789abcdef',
    scopes: ['profiles', 'push', 'events', 'exports', 'campaigns'],
  },
  revokedKey: {
    org_id: 1,
    api_key: 'b1b1b1b1b1b1b1b1b1b1b1b1',
    api_secret: 'old-revoked-secret-0123456789',
    scopes: ['events'],
  },
  maxOrgId: 3,
  maxProfileDbId: 4,
}

export async function writeOldControlRows(store: Store): Promise<void> {
  const day = 86_400_000
  const t = Date.now() - day
  // createOrg / createApp of that version: the profile db first, then the org or app.
  await store.insert('profile_dbs', [
    { id: 1, org_id: 1, app_id: '', created_at: t },
    { id: 2, org_id: 1, app_id: OLD.app.app_id, created_at: t + 2 },
    { id: 3, org_id: 2, app_id: '', created_at: t + 3 },
    { id: 4, org_id: 3, app_id: '', created_at: t + 4 },
  ])
  await store.insert(
    'orgs',
    OLD.orgs.map((o, i) => ({ ...o, created_at: t + [0, 3, 4][i]!, version: t + [0, 3, 4][i]! })),
  )
  await store.insert('apps', [{ ...OLD.app, created_at: t + 2, deleted: 0, version: t + 2 }])
  const keyRow = (k: typeof OLD.key, at: number) => ({
    api_key: k.api_key,
    org_id: k.org_id,
    secret_hash: hashSecret(k.api_key, k.api_secret),
    scopes: k.scopes,
    created_at: at,
    revoked: 0,
    revoked_at: null,
    version: at,
  })
  await store.insert('api_keys', [keyRow(OLD.key, t + 5), keyRow(OLD.revokedKey, t + 6)])
  // revokeKey of that version: a new row with created_at = now and a version above the last.
  await store.insert('api_keys', [
    { ...keyRow(OLD.revokedKey, t + 7), revoked: 1, revoked_at: t + 7, version: t + 7 },
  ])
}
