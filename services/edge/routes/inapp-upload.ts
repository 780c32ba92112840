import { Readable } from 'node:stream'
import type { Files } from '../../../pipelines/connectors/files/files.ts'
import { assetFileName, checkAsset, type AssetLimits } from '../../../pipelines/campaigns/inapp-assets.ts'
import { LETTERS, type Issue } from '../../../pipelines/campaigns/validate-campaign.ts'
import { parseJsonWellFormed } from '../../../pipelines/text/unicode.ts'
import type { InappCampaignBody, StoredAsset } from '../../../schemas/campaigns.ts'
import { badRequest, unsupportedMediaType } from '../../shared/errors.ts'
import { readBoundedBody } from '../read-body.ts'
import { unprocessable } from '../campaign-errors.ts'

export interface InappUploadLimits {
  /** The whole multipart body, refused (413) as soon as it passes this, before it is parsed. */
  maxRequestBytes: number
  asset: AssetLimits
}

interface CheckedFile {
  field: string
  device: 'phone' | 'tablet'
  /** 1-based: creative N of the campaign's creatives. */
  creative: number
  name: string
  data: Buffer
  kind: 'html' | 'zip'
  sha256: string
}

const FILE_FIELD = /^file_(phone|tablet)_([1-9]\d{0,2})$/

/**
 * An in-app create or update request: multipart/form-data with `data` (the campaign JSON) and
 * `file_phone_N` / `file_tablet_N` (creative N's HTML or zip). The body is capped before it is
 * parsed; every file is checked by its content (inapp-assets.ts). `store` writes the files
 * through the files port under a content-addressed path once the campaign JSON is valid.
 */
export async function readInappUpload(request: Request, limits: InappUploadLimits) {
  const type = request.headers.get('content-type') ?? ''
  if (!/^multipart\/form-data\s*;/i.test(type))
    throw unsupportedMediaType(
      'in-app campaigns are sent as multipart/form-data (a data field and creative files)',
    )
  const raw = await readBoundedBody(request, limits.maxRequestBytes)
  let form: FormData
  try {
    form = await new Response(raw, { headers: { 'content-type': type } }).formData()
  } catch {
    throw badRequest('the multipart body could not be parsed')
  }
  const dataField = form.get('data')
  if (dataField === null) throw badRequest('the data field (the campaign as JSON) is required')
  const dataText = typeof dataField === 'string' ? dataField : await dataField.text()
  let data: unknown
  try {
    data = parseJsonWellFormed(dataText)
  } catch {
    throw badRequest('the data field is not valid JSON')
  }
  const issues: Issue[] = []
  const files: CheckedFile[] = []
  for (const [field, value] of form.entries()) {
    if (field === 'data') continue
    const m = FILE_FIELD.exec(field)
    if (!m) {
      if (typeof value !== 'string')
        issues.push({ path: field, message: 'is not a field of an in-app campaign' })
      continue
    }
    // An empty text part is a file not sent (some form clients send one for an empty input).
    if (typeof value === 'string') {
      if (value !== '') issues.push({ path: field, message: 'must be a file (HTML or zip)' })
      continue
    }
    const device = m[1] as 'phone' | 'tablet'
    const creative = Number(m[2])
    const bytes = Buffer.from(await value.arrayBuffer())
    const name = assetFileName(
      value.name,
      `${device}_${creative}.${bytes.subarray(0, 2).toString() === 'PK' ? 'zip' : 'html'}`,
    )
    const check = await checkAsset(bytes, name, limits.asset)
    if (!check.ok) {
      issues.push({ path: field, message: check.reason })
      continue
    }
    files.push({ field, device, creative, name, data: bytes, kind: check.kind, sha256: check.sha256 })
  }
  if (issues.length > 0) throw unprocessable(issues)
  return {
    data,
    async store(store: Files, appId: string, creatives: number): Promise<InappCampaignBody['assets']> {
      const beyond = files.filter((f) => f.creative > creatives)
      if (beyond.length > 0)
        throw unprocessable(
          beyond.map((f) => ({
            path: f.field,
            message: `there is no creative ${f.creative} (the campaign has ${creatives})`,
          })),
        )
      const assets: InappCampaignBody['assets'] = {}
      for (const f of files) {
        const path = `inapp/${appId}/${f.sha256}/${f.name}`
        if (!(await store.exists(path))) await store.put(path, f.data)
        const asset: StoredAsset = {
          name: f.name,
          path,
          kind: f.kind,
          bytes: f.data.length,
          sha256: f.sha256,
        }
        const letter = LETTERS[f.creative - 1]!
        assets[letter] = { ...assets[letter], [f.device]: asset }
      }
      return assets
    },
  }
}

/**
 * A stored creative file as an answer. An HTML file runs in a sandbox of its own origin (CSP
 * sandbox), so a creative's scripts can never act as the API's origin in a browser.
 */
export function serveAsset(files: Files, asset: StoredAsset): Response {
  const headers: Record<string, string> = {
    'content-type': asset.kind === 'zip' ? 'application/zip' : 'text/html; charset=utf-8',
    'content-length': String(asset.bytes),
    'x-content-type-options': 'nosniff',
    'cache-control': 'public, max-age=86400, immutable',
    etag: `"${asset.sha256}"`,
    'content-disposition': `${asset.kind === 'zip' ? 'attachment' : 'inline'}; filename="${asset.name}"`,
  }
  if (asset.kind === 'html') headers['content-security-policy'] = 'sandbox allow-scripts allow-popups'
  const stream = Readable.toWeb(files.read(asset.path)) as ReadableStream<Uint8Array>
  return new Response(stream, { status: 200, headers })
}
