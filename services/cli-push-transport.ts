import { readFileSync } from 'node:fs'

/**
 * `sluice admin push-transport set|list|remove`: flags → an admin API request. Secrets and keys are
 * best given as files (--secret-file, --key-file, --service-account-file): a value on the command
 * line is seen by `ps` and kept in shell history.
 */
export const PUSH_TRANSPORT_OPTIONS = {
  app: { type: 'string' },
  platform: { type: 'string' },
  kind: { type: 'string' },
  settings: { type: 'string' },
  'webhook-url': { type: 'string' },
  secret: { type: 'string' },
  'secret-file': { type: 'string' },
  'timeout-ms': { type: 'string' },
  'batch-size': { type: 'string' },
  'key-file': { type: 'string' },
  'key-id': { type: 'string' },
  'team-id': { type: 'string' },
  topic: { type: 'string' },
  environment: { type: 'string' },
  'expiration-seconds': { type: 'string' },
  'service-account-file': { type: 'string' },
  'project-id': { type: 'string' },
  concurrency: { type: 'string' },
} as const

export const PUSH_TRANSPORT_USAGE = `    admin push-transport list --app APP_ID
    admin push-transport remove --app APP_ID --platform ios|android|all
    admin push-transport set --app APP_ID --platform ios|android|all --kind KIND ...
      file:     (no settings)
      webhook:  --webhook-url URL (--secret-file FILE | --secret S) [--timeout-ms N] [--batch-size N]
      apns:     --key-file AuthKey.p8 --key-id ID --team-id ID --topic BUNDLE_ID
                [--environment production|sandbox] [--expiration-seconds N] [--concurrency N]
      fcm:      --service-account-file key.json [--project-id ID] [--concurrency N]
      any kind: --settings JSON (merged under the flags)
`

type Values = Partial<Record<keyof typeof PUSH_TRANSPORT_OPTIONS, string | boolean>>

export function pushTransportRequest(
  action: string | undefined,
  values: Values,
  usage: (message: string) => Error,
): { method: string; path: string; body?: unknown } {
  const str = (name: keyof Values): string | undefined => {
    const v = values[name]
    return typeof v === 'string' ? v : undefined
  }
  const need = (name: keyof Values): string => {
    const v = str(name)
    if (!v) throw usage(`--${name} is required`)
    return v
  }
  const file = (name: keyof Values): string | undefined => {
    const path = str(name)
    if (path === undefined) return undefined
    try {
      return readFileSync(path, 'utf8')
    } catch (err) {
      throw usage(`--${name}: cannot read ${path}: ${(err as Error).message}`)
    }
  }
  const int = (name: keyof Values): number | undefined => {
    const v = str(name)
    if (v === undefined) return undefined
    if (!/^\d+$/.test(v)) throw usage(`--${name} must be a whole number`)
    return Number(v)
  }
  const base = () => `/apps/${encodeURIComponent(need('app'))}/push/transports`
  switch (action) {
    case 'list':
      return { method: 'GET', path: base() }
    case 'remove':
      return { method: 'DELETE', path: `${base()}/${encodeURIComponent(need('platform'))}` }
    case 'set': {
      const path = `${base()}/${encodeURIComponent(need('platform'))}`
      let settings: Record<string, unknown> = {}
      const json = str('settings')
      if (json !== undefined) {
        try {
          settings = JSON.parse(json) as Record<string, unknown>
        } catch {
          throw usage('--settings must be a JSON object')
        }
      }
      const serviceAccount = file('service-account-file')
      const flags: Record<string, unknown> = {
        url: str('webhook-url'),
        secret: str('secret') ?? file('secret-file')?.trim(),
        timeout_ms: int('timeout-ms'),
        batch_size: int('batch-size'),
        key: file('key-file'),
        key_id: str('key-id'),
        team_id: str('team-id'),
        topic: str('topic'),
        environment: str('environment'),
        expiration_seconds: int('expiration-seconds'),
        service_account: serviceAccount,
        project_id: str('project-id'),
        concurrency: int('concurrency'),
      }
      for (const [k, v] of Object.entries(flags)) if (v !== undefined) settings[k] = v
      return { method: 'PUT', path, body: { kind: need('kind'), settings } }
    }
    default:
      throw usage(`unknown admin command: push-transport ${action ?? ''}`)
  }
}
