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
