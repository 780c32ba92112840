/**
 * Imports (docs/imports.md): the wire formats of profile and audience imports. A body is CSV or
 * JSON lines, plain or gzip; the edge keeps it durably in the files port and the import processor
 * reads it row by row.
 */

export const IMPORT_FORMATS = ['csv', 'jsonl'] as const
export type ImportFormat = (typeof IMPORT_FORMATS)[number]

export type ImportCompression = 'gzip' | 'none'

export const IMPORT_KINDS = ['profiles', 'audience'] as const
export type ImportKind = (typeof IMPORT_KINDS)[number]

/** Identifiers an audience import may list; a list is of one kind. */
export const MEMBER_ID_TYPES = ['customer_id', 'email', 'install_id'] as const
export type MemberIdType = (typeof MEMBER_ID_TYPES)[number]
export const isMemberIdType = (v: unknown): v is MemberIdType =>
  typeof v === 'string' && (MEMBER_ID_TYPES as readonly string[]).includes(v)

/** What an audience import does to the audience it names. */
export const AUDIENCE_IMPORT_MODES = ['create', 'replace', 'add'] as const
export type AudienceImportMode = (typeof AUDIENCE_IMPORT_MODES)[number]

export const IMPORT_STATES = ['queued', 'processing', 'read', 'done', 'failed'] as const
export type ImportState = (typeof IMPORT_STATES)[number]

export const IMPORT_LIMITS = {
  /** Rejected rows kept with their reason per import (the count is whole). */
  keptRejectedRows: 1000,
  /** Longest member identifier of an audience import, in characters. */
  memberMaxChars: 128,
  /** Longest first line (a CSV header) the edge reads to check the body before its 202. */
  headerMaxBytes: 64 * 1024,
} as const

/** The options of an audience import, as the edge received them (query string). */
export interface AudienceImportOptions {
  mode: AudienceImportMode
  /** The audience to create (mode create), or null. */
  name: string | null
  /** The audience to replace or add to (modes replace, add), or null. */
  audience_id: number | null
  /** The identifiers' kind when the body does not name it (a CSV without a header). */
  id_type: MemberIdType | null
}

/** A receipt's rejected row: its 1-based line, its key as sent, and why. */
export interface RejectedRow {
  line: number
  customer_id?: string
  member?: string
  reason: string
}
