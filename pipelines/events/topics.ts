/** Topic and consumer-group names of the ingestion pipelines (the prefix comes from config). */
export function ingestionTopics(prefix: string) {
  return {
    /** Server-side upload transactions, one record per request body, as received. */
    uploads: `${prefix}uploads`,
    /** SDK upload bodies, keyed by app so one owner builds each app's device state. */
    sdkUploads: `${prefix}sdk-uploads`,
    /** Validated, attributed events, keyed by app + uuid: the single owner of each uuid stores it once. */
    events: `${prefix}events`,
  }
}

export function ingestionGroups(prefix: string) {
  return {
    uploads: `${prefix}uploads-splitter`,
    sdkUploads: `${prefix}sdk-builder`,
    events: `${prefix}events-writer`,
  }
}

export type IngestionTopics = ReturnType<typeof ingestionTopics>

/** Headers of an upload record: everything the worker needs besides the body. */
export interface UploadHeaders {
  tx: string
  org: string
  key: string
  recv: string
  enc: 'gzip' | 'identity'
  src: 'server' | 'sdk'
  app?: string
}
