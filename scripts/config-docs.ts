// Writes docs/configuration.md from the configuration schema (services/config.ts), its one source:
// `npm run docs:config` after adding or changing a setting. test/unit/config-docs.test.ts fails
// while the page differs from what this renders.
import { writeFileSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { z } from 'zod'
import { configAreas, configSchema } from '../services/config.ts'

export const CONFIGURATION_DOC = fileURLToPath(new URL('../docs/configuration.md', import.meta.url))

/** What the JSON Schema of a setting's input side (the text an operator writes) says of it. */
interface InputSchema {
  type?: string
  format?: string
  enum?: string[]
  minimum?: number
  maximum?: number
  default?: unknown
}

const inputSchema = (setting: z.ZodType): InputSchema =>
  z.toJSONSchema(setting, { io: 'input', unrepresentable: 'any' }) as InputSchema

const FORMATS: Record<string, string> = { uri: 'URL' }

function typeOf(schema: InputSchema): string {
  if (schema.enum) return `one of ${schema.enum.map((v) => `\`${v}\``).join(', ')}`
  if (schema.type === 'integer') {
    const min = schema.minimum ?? Number.MIN_SAFE_INTEGER
    const max = schema.maximum ?? Number.MAX_SAFE_INTEGER
    if (max < Number.MAX_SAFE_INTEGER) return `integer ${min}–${max}`
    return min > Number.MIN_SAFE_INTEGER ? `integer ≥ ${min}` : 'integer'
  }
  if (schema.format !== undefined) return FORMATS[schema.format] ?? schema.format
  return schema.type ?? 'text'
}

const BINARY_UNITS = ['KiB', 'MiB', 'GiB', 'TiB'] as const

function defaultOf(name: string, schema: InputSchema): string {
  const value = schema.default
  if (value === undefined) return 'unset'
  if (value === '') return 'empty'
  if (typeof value === 'number' && name.endsWith('_BYTES')) {
    let size = value
    let unit = -1
    while (size >= 1024 && size % 1024 === 0 && unit < BINARY_UNITS.length - 1) {
      size /= 1024
      unit++
    }
    return unit < 0 ? `\`${value}\`` : `\`${value}\` (${size} ${BINARY_UNITS[unit]})`
  }
  return `\`${typeof value === 'string' ? value : JSON.stringify(value)}\``
}

/** `docs/x.md`, `bench/README.md` and `README.md` in a description become links from docs/. */
const linked = (text: string): string =>
  text.replace(
    /\b(docs\/([\w-]+\.md)|bench\/README\.md|README\.md)/g,
    (path: string, _docs, page?: string) =>
      page === undefined ? `[${path}](../${path})` : `[${path}](${page})`,
  )

const cell = (text: string): string => text.replaceAll('|', '\\|').replaceAll('\n', ' ')

/** The whole page, from the schema as it is now. Throws on a setting without area or description. */
export function renderConfigurationDoc(): string {
  const shape: Record<string, z.ZodType> = configSchema.shape
  const placed = new Set<string>()
  const sections = configAreas.map((area) => {
    const rows = Object.entries(area.settings).map(([name, setting]) => {
      if (placed.has(name)) throw new Error(`${name} is in two areas of configAreas (services/config.ts)`)
      placed.add(name)
      if (shape[name] !== setting)
        throw new Error(`${name} of area "${area.title}" is not the schema's field`)
      const description = setting.description
      if (!description) throw new Error(`${name} has no .describe() (services/config.ts)`)
      const input = inputSchema(setting)
      return `| \`${name}\` | ${cell(typeOf(input))} | ${cell(defaultOf(name, input))} | ${cell(linked(description))} |`
    })
    return [
      `## ${area.title}`,
      '',
      linked(area.about),
      '',
      '| variable | type | default | meaning |',
      '|---|---|---|---|',
      ...rows,
    ].join('\n')
  })
  const unplaced = Object.keys(shape).filter((name) => !placed.has(name))
  if (unplaced.length > 0)
    throw new Error(`in no area of configAreas (services/config.ts): ${unplaced.join(', ')}`)
  return [
    '# Configuration',
    '',
    '<!-- Generated from services/config.ts by `npm run docs:config`: edit the schema, not this page. -->',
    '',
    'Sluice reads every setting from the environment once, when a process starts, and checks it: a bad',
    'value stops the process with a message naming the variable (exit code 78). Unknown variables are',
    'ignored. A blank value counts as unset.',
    '',
    ...configAreas.map((area) => `- [${area.title}](#${anchor(area.title)})`),
    '',
    sections.join('\n\n'),
    '',
  ].join('\n')
}

/** GitHub's heading anchors: lower case, punctuation dropped, spaces to hyphens. */
const anchor = (title: string): string =>
  title
    .toLowerCase()
    .replace(/[^\w\- ]/g, '')
    .replaceAll(' ', '-')

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  writeFileSync(CONFIGURATION_DOC, renderConfigurationDoc())
  console.log(`wrote ${CONFIGURATION_DOC}`)
}
