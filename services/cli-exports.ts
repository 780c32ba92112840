/**
 * `sluice admin exports …`: the CLI side of the export admin API (docs/exports.md). Kept apart
 * from cli.ts, which registers its flags, usage lines and resource.
 */

export const EXPORT_CLI_OPTIONS = {
  'source-type': { type: 'string' },
  'source-id': { type: 'string' },
  'job-types': { type: 'string' },
  hour: { type: 'string' },
  plan: { type: 'string' },
} as const

export const EXPORT_CLI_USAGE = `    admin exports enable --org ID --source-type audiences|profiles|logs --source-id ID
                         [--job-types idfa,gaid,...] [--name NAME]
    admin exports list --org ID          admin exports disable --org ID --id EXPORT_ID
    admin exports refresh --org ID --id EXPORT_ID [--hour YYYY-MM-DDTHH]
    admin exports plan --org ID --plan standard|remarketing
`

export interface ExportCliValues {
  org?: string
  id?: string
  name?: string
  'source-type'?: string
  'source-id'?: string
  'job-types'?: string
  hour?: string
  plan?: string
}

/** The admin request of `exports <action>`; throws (via `missing`) when a flag is missing. */
export function exportAdminRequest(
  action: string | undefined,
  values: ExportCliValues,
  missing: (flag: string) => never,
): { method: string; path: string; body?: unknown } | undefined {
  const need = (flag: keyof ExportCliValues): string => values[flag] ?? missing(flag)
  const base = () => `/orgs/${encodeURIComponent(need('org'))}`
  switch (action) {
    case 'enable':
      return {
        method: 'POST',
        path: `${base()}/exports`,
        body: {
          source_type: need('source-type'),
          source_id: need('source-id'),
          ...(values['job-types'] && {
            job_types: values['job-types'].split(',').map((t) => t.trim()),
          }),
          ...(values.name && { name: values.name }),
        },
      }
    case 'list':
      return { method: 'GET', path: `${base()}/exports` }
    case 'disable':
      return { method: 'DELETE', path: `${base()}/exports/${encodeURIComponent(need('id'))}` }
    case 'refresh':
      return {
        method: 'POST',
        path: `${base()}/exports/${encodeURIComponent(need('id'))}/refresh`,
        body: values.hour ? { hour: values.hour } : {},
      }
    case 'plan':
      return { method: 'PUT', path: `${base()}/export-plan`, body: { plan: need('plan') } }
    default:
      return undefined
  }
}
