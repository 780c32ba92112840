import { z } from 'zod'

/*
 * The builders of the configuration schema's fields (config.ts, exports-config.ts). Every value
 * arrives as text from the environment; each builder says how it is read. docs/configuration.md
 * is generated from the schema (scripts/config-docs.ts): a field's type and default are read from
 * its input side (what an operator writes), so a builder whose text means more than "a string"
 * names that meaning in the input's `format` (shown as the type), and each field's `.describe()`
 * is its meaning.
 */

/** An integer at least `min` (and at most `max`), `def` when unset. */
export const int = (def: number, min = 0, max?: number) =>
  (max === undefined ? z.coerce.number().int().min(min) : z.coerce.number().int().min(min).max(max)).default(
    def,
  )

/** A TCP port; 0 picks a free one. */
export const port = (def: number) => int(def, 0, 65535)

/** An integer at least `min` (and at most `max`), undefined when unset (the code picks a default that depends on more). */
export const optionalInt = (min: number, max?: number) =>
  (max === undefined
    ? z.coerce.number().int().min(min)
    : z.coerce.number().int().min(min).max(max)
  ).optional()

/** Text, undefined when unset or blank; `format` names what the text is (docs/configuration.md). */
export const optionalText = (format?: string) =>
  (format === undefined ? z.string() : z.string().meta({ format }))
    .optional()
    .transform((v) => (v === undefined || v.trim() === '' ? undefined : v))

/** An absolute URL, undefined when unset or blank. */
export const optionalUrl = () => optionalText('uri').pipe(z.url().optional())

/** Comma-separated items, blanks dropped. */
export const splitList = (text: string): string[] =>
  text
    .split(',')
    .map((item) => item.trim())
    .filter(Boolean)

/** A switch: 1, 0, true or false; off when unset or blank. */
export const flag = () =>
  optionalText('1, 0, true or false').pipe(
    z
      .enum(['0', '1', 'false', 'true'], { error: 'must be 1, 0, true or false' })
      .optional()
      .transform((v) => v === '1' || v === 'true'),
  )
