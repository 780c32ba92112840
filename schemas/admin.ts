import { z } from 'zod'

/** What an API key may be allowed to do: one scope per API area (`query`: the Query and Apps APIs). */
export const SCOPES = ['profiles', 'push', 'events', 'exports', 'campaigns', 'query'] as const
export type Scope = (typeof SCOPES)[number]

/**
 * Every scope before `query` existed: a key holding all of them was made with every scope, so it
 * holds `query` too (control-store.ts adds it when the key is read); a key made with fewer does not.
 */
export const SCOPES_BEFORE_QUERY: readonly Scope[] = ['profiles', 'push', 'events', 'exports', 'campaigns']

/** A stored key's scopes as they stand now (see SCOPES_BEFORE_QUERY). */
export function effectiveScopes(stored: readonly Scope[]): Scope[] {
  const all = SCOPES_BEFORE_QUERY.every((s) => stored.includes(s))
  return all && !stored.includes('query') ? [...stored, 'query'] : [...stored]
}

export const createOrgBody = z.object({
  name: z.string().trim().min(1, 'name must not be empty').max(200),
})

export const createAppBody = z.object({
  name: z.string().trim().min(1, 'name must not be empty').max(200),
  app_id: z
    .string()
    .regex(/^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/, 'app_id: 1..128 characters of letters, digits, . _ -')
    .optional(),
})

export const createKeyBody = z.object({
  scopes: z.array(z.enum(SCOPES)).min(1, 'scopes must not be empty').optional(),
})

export const orgIdParam = z.coerce.number().int().positive()

/** GET /admin/v1/dead-letters?stage=&limit= */
export const deadLettersQuery = z.object({
  stage: z
    .string()
    .regex(/^[A-Za-z0-9._-]{1,100}$/, 'stage: 1..100 characters of letters, digits, . _ -')
    .optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
})
