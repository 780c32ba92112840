import { randomUUID } from 'node:crypto'
import { Readable } from 'node:stream'
import { Hono, type Context } from 'hono'
import type { Bus } from '../../../pipelines/connectors/bus/bus.ts'
import type { Files } from '../../../pipelines/connectors/files/files.ts'
import type { Store } from '../../../pipelines/connectors/store/store.ts'
import { readLiveAudience } from '../../../pipelines/audiences/audience-reader.ts'
import { AUDIENCE_NAME_MAX } from '../../../pipelines/audiences/audience-payloads.ts'
import { BodyCheck, BodyRefused, type BodyFacts } from '../../../pipelines/imports/body-check.ts'
import { memberHeader } from '../../../pipelines/imports/audience-members.ts'
import {
  encodeImportJob,
  newImportRow,
  readImport,
  readReceipt,
  type ImportJob,
} from '../../../pipelines/imports/import-jobs.ts'
import { parseCsvHeader } from '../../../pipelines/imports/profile-rows.ts'
import { LIST_ID, parseTargetRules } from '../../../schemas/audiences.ts'
import { charsAtMost } from '../../../schemas/events.ts'
import { isMemberIdType, type AudienceImportOptions, type ImportKind } from '../../../schemas/imports.ts'
import { AudienceControl } from '../../control/audience-control.ts'
import type { CommandSender } from '../../control/command-client.ts'
import { controlWrite } from '../../control/control-errors.ts'
import type { App, ControlStore } from '../../control/control-store.ts'
import { badRequest, forbidden, notFound, SluiceError } from '../../shared/errors.ts'
import type { EdgeEnv } from '../env.ts'
import { bodyKind, headerCells, importId } from '../imports/import-request.ts'
import { apiAuth } from '../middleware/api-auth.ts'

export interface ImportRouteDeps {
  bus: Bus
  store: Store
  files: Files
  control: ControlStore
  commands: CommandSender
  /** The imports topic. */
  topic: string
  limits: { maxBytes: number; maxInflatedBytes: number }
}

type Ctx = Context<EdgeEnv>

const AUDIENCES = '/api/v6/orgs/:org_id/apps/:app_id/audiences/imports'
const POSITIVE_INT = /^[1-9][0-9]{0,15}$/
const MAX_IDEMPOTENCY_KEY = 255

/**
 * Imports (docs/imports.md): `POST /v1/imports/profiles` (org level) and
 * `POST /v1/apps/:app_id/imports/profiles` (app level), `GET /v1/imports/:id` (profiles scope);
 * `POST …/audiences/imports` and `GET …/audiences/imports/:id` (campaigns scope). The body streams
 * to the files port (fsync'd), checked on its way (size, gzip, first line); the 202 comes once the
 * body is durable and a small record naming it is on the imports topic.
 */
export function importRoutes(deps: ImportRouteDeps) {
  const app = new Hono<EdgeEnv>()
  const audiences = new AudienceControl(deps.commands)
  const profilesAuth = apiAuth(deps.control, 'profiles')
  const campaignsAuth = apiAuth(deps.control, 'campaigns')

  const ownApp = async (c: Ctx, appId: string): Promise<App> => {
    const found = await deps.control.getApp(appId)
    if (!found || found.org_id !== c.get('principal').orgId)
      throw forbidden(`app ${appId} does not belong to this organization`)
    return found
  }

  /** Streams the body durably to `imports/incoming/…` while checking it; the facts once stored. */
  const receive = async (c: Ctx, declaredGzip: boolean): Promise<{ incoming: string; facts: BodyFacts }> => {
    const body = c.req.raw.body
    if (!body) throw badRequest('import body is empty')
    const incoming = `imports/incoming/${randomUUID()}`
    const check = new BodyCheck(deps.limits, declaredGzip)
    const source = Readable.fromWeb(body as import('node:stream/web').ReadableStream<Uint8Array>)
    source.on('error', (err) => check.destroy(err))
    // The write below reports the check's first error; a second one (the inflater's, after the
    // refusal) has nobody left to hear it.
    check.on('error', () => undefined)
    try {
      await deps.files.putDurable(incoming, source.pipe(check))
    } catch (err) {
      if (err instanceof BodyRefused)
        throw new SluiceError(
          err.status === 413 ? 'payload_too_large' : 'bad_request',
          err.status,
          err.message,
        )
      throw err
    }
    const facts = check.facts()
    if (facts.inflatedBytes === 0) {
      await deps.files.remove(incoming)
      throw badRequest('import body is empty')
    }
    return { incoming, facts }
  }

  /**
   * Files the received body under its import id and hands the job on, unless the same import was
   * taken before (then its id is answered again, and nothing is applied twice).
   */
  const accept = async (
    c: Ctx,
    incoming: string,
    job: Omit<ImportJob, 'id' | 'path' | 'v'>,
    id: string,
    prepare?: () => Promise<number>,
  ) => {
    const existing = await readImport(deps.store, id)
    if (existing && existing.state !== 'queued') {
      await deps.files.remove(incoming)
      return c.json(
        {
          import_id: id,
          state: existing.state,
          duplicate: true,
          ...(existing.kind === 'audience' && { audience_id: existing.audience_id }),
        },
        202,
      )
    }
    const path = `imports/${id}`
    await deps.files.move(incoming, path)
    let full: ImportJob = { v: 1, id, path, ...job }
    if (existing && full.audience)
      full = { ...full, audience: { ...full.audience, audience_id: existing.audience_id } }
    else if (prepare && full.audience)
      full = { ...full, audience: { ...full.audience, audience_id: await prepare() } }
    try {
      if (!existing) await deps.store.insert('imports', [newImportRow(full, Date.now())])
      await deps.bus.produce(deps.topic, [encodeImportJob(full)])
    } catch (err) {
      throw new SluiceError('bus_unavailable', 503, 'could not queue the import durably; retry', {
        retriable: true,
        headers: { 'Retry-After': '1' },
        cause: err,
      })
    }
    return c.json(
      { import_id: id, state: 'queued', ...(full.audience && { audience_id: full.audience.audience_id }) },
      202,
    )
  }

  const idempotencyKey = (c: Ctx): string | undefined => {
    const key = c.req.header('Idempotency-Key')
    if (key === undefined) return undefined
    if (key === '' || !charsAtMost(key, MAX_IDEMPOTENCY_KEY))
      throw badRequest(`Idempotency-Key must be 1..${MAX_IDEMPOTENCY_KEY} characters`)
    return key
  }

  const importProfiles = async (c: Ctx, target: App | undefined) => {
    const orgId = c.get('principal').orgId
    const org = await deps.control.getOrg(orgId)
    if (!org) throw forbidden('the organization of this API key no longer exists')
    const kind = bodyKind(
      c.req.header('Content-Type'),
      c.req.header('Content-Encoding'),
      c.req.query('format'),
    )
    const key = idempotencyKey(c)
    const { incoming, facts } = await receive(c, kind.declaredGzip)
    try {
      if (kind.format === 'csv') {
        const header = parseCsvHeader(headerCells(facts.firstLine), target ? 'app' : 'org')
        if (!header.ok) throw badRequest(header.reason)
      }
    } catch (err) {
      await deps.files.remove(incoming)
      throw err
    }
    const db = target ? target.profiledb_id : org.profiledb_id
    const id = importId({
      org: orgId,
      kind: 'profiles',
      target: String(db),
      idempotencyKey: key,
      sha256: facts.sha256,
    })
    return accept(
      c,
      incoming,
      {
        kind: 'profiles' satisfies ImportKind,
        org: orgId,
        app: target?.app_id ?? '',
        db,
        format: kind.format,
        compression: facts.compression,
        bytes: facts.bytes,
        receivedAt: Date.now(),
      },
      id,
    )
  }

  app.post('/v1/imports/profiles', profilesAuth, (c) => importProfiles(c, undefined))
  app.post('/v1/apps/:app_id/imports/profiles', profilesAuth, async (c) =>
    importProfiles(c, await ownApp(c, c.req.param('app_id'))),
  )

  const receipt = async (c: Ctx, kind: ImportKind, appId?: string) => {
    const id = c.req.param('id') ?? ''
    const found = LIST_ID.test(id) ? await readReceipt(deps.store, c.get('principal').orgId, id) : undefined
    if (!found || found.kind !== kind || (appId !== undefined && found.app_id !== appId))
      throw notFound(`import ${id.slice(0, 64)} not found`)
    return c.json(found)
  }
  app.get('/v1/imports/:id', profilesAuth, (c) => receipt(c, 'profiles'))

  /** The org and app of an audience path, checked against the key: 403 for anything not the key's. */
  const audienceScope = async (c: Ctx): Promise<{ orgId: number; target: App }> => {
    const raw = c.req.param('org_id') ?? ''
    if (!POSITIVE_INT.test(raw)) throw badRequest(`invalid org_id: ${JSON.stringify(raw)}`)
    const orgId = Number(raw)
    if (orgId !== c.get('principal').orgId)
      throw forbidden(`org ${orgId} is not the organization of this API key`)
    return { orgId, target: await ownApp(c, c.req.param('app_id') ?? '') }
  }

  app.post(AUDIENCES, campaignsAuth, async (c) => {
    const { orgId, target } = await audienceScope(c)
    const org = await deps.control.getOrg(orgId)
    if (!org) throw forbidden('the organization of this API key no longer exists')
    const options = audienceOptions(c)
    if (options.audience_id !== null) {
      const audience = await readLiveAudience(deps.store, orgId, target.app_id, options.audience_id)
      if (!audience) throw notFound(`audience ${options.audience_id} not found`)
      const rules = parseTargetRules(JSON.parse(audience.target_rules))
      if (!rules.ok || !rules.rules.static)
        throw new SluiceError(
          'unprocessable',
          422,
          `audience ${options.audience_id} is a rule audience; imports replace or add to static audiences only`,
        )
    }
    const kind = bodyKind(
      c.req.header('Content-Type'),
      c.req.header('Content-Encoding'),
      c.req.query('format'),
    )
    const key = idempotencyKey(c)
    const { incoming, facts } = await receive(c, kind.declaredGzip)
    if (kind.format === 'csv' && options.id_type === null && !memberHeader(headerCells(facts.firstLine))) {
      await deps.files.remove(incoming)
      throw badRequest(
        'a CSV of members needs a header naming its column (customer_id, email or install_id), or ?id_type=',
      )
    }
    const targetKey = `${target.app_id}\n${options.mode}\n${options.name ?? ''}\n${options.audience_id ?? ''}\n${options.id_type ?? ''}`
    const id = importId({
      org: orgId,
      kind: 'audience',
      target: targetKey,
      idempotencyKey: key,
      sha256: facts.sha256,
    })
    return accept(
      c,
      incoming,
      {
        kind: 'audience',
        org: orgId,
        app: target.app_id,
        db: org.profiledb_id,
        format: kind.format,
        compression: facts.compression,
        bytes: facts.bytes,
        receivedAt: Date.now(),
        audience: { ...options, audience_id: options.audience_id ?? 0 },
      },
      id,
      options.mode === 'create'
        ? async () => {
            const given = { static: { lists: [] } }
            const parsed = parseTargetRules(given)
            if (!parsed.ok) throw new Error('static rules do not parse')
            const record = await controlWrite(() =>
              audiences.create(orgId, target.app_id, options.name!, {
                canonical: parsed.rules as unknown as Record<string, unknown>,
                given,
              }),
            )
            return record.id
          }
        : undefined,
    )
  })

  app.get(`${AUDIENCES}/:id`, campaignsAuth, async (c) => {
    const { target } = await audienceScope(c)
    return receipt(c, 'audience', target.app_id)
  })

  return app
}

/** `?name=` creates a static audience; `?audience_id=&mode=replace|add` changes one. */
function audienceOptions(c: Ctx): AudienceImportOptions {
  const name = c.req.query('name')?.trim()
  const rawId = c.req.query('audience_id')
  const mode = c.req.query('mode')
  const idType = c.req.query('id_type')
  if (idType !== undefined && !isMemberIdType(idType))
    throw badRequest('id_type must be customer_id, email or install_id')
  if (rawId === undefined) {
    if (!name) throw badRequest('give ?name= to create a static audience, or ?audience_id= to change one')
    if (!charsAtMost(name, AUDIENCE_NAME_MAX))
      throw badRequest(`name must be at most ${AUDIENCE_NAME_MAX} characters`)
    if (mode !== undefined && mode !== 'create')
      throw badRequest('mode applies with audience_id (replace or add)')
    return { mode: 'create', name, audience_id: null, id_type: idType ?? null }
  }
  if (!POSITIVE_INT.test(rawId))
    throw badRequest(`invalid audience_id: ${JSON.stringify(rawId.slice(0, 32))}`)
  if (name) throw badRequest('give either name (create) or audience_id (replace or add), not both')
  if (mode !== undefined && mode !== 'replace' && mode !== 'add')
    throw badRequest('mode must be replace or add')
  return { mode: mode ?? 'replace', name: null, audience_id: Number(rawId), id_type: idType ?? null }
}
