import { describe, expect, it } from 'vitest'
import { EVENT_SCHEMA_PATH, eventJsonSchema, eventLineSchema } from '../../schemas/events.ts'

type Props = Record<string, Record<string, unknown>>

describe('eventJsonSchema', () => {
  const schema = eventJsonSchema()
  const properties = schema.properties as Props

  it('identifies itself', () => {
    expect(schema.$schema).toBe('https://json-schema.org/draft/2020-12/schema')
    expect(schema.$id).toBe(EVENT_SCHEMA_PATH)
    expect(schema.title).toEqual(expect.stringContaining('v0'))
    expect(schema.description).toEqual(expect.any(String))
    expect(Object.keys(schema).slice(0, 4)).toEqual(['$schema', '$id', 'title', 'description'])
  })

  it('takes the served address as $id', () => {
    const url = 'https://events.example.com/schemas/events/v0.json'
    expect(eventJsonSchema(url).$id).toBe(url)
    expect(eventJsonSchema().$id).toBe(EVENT_SCHEMA_PATH)
  })

  it('lists the wire fields, the required ones, and ignores unknown fields', () => {
    expect(Object.keys(properties)).toEqual([
      'schema_url',
      'app_uuid',
      'customer_id',
      'event_name',
      'uuid',
      'event_time',
      'attributes',
      'ltv_change',
    ])
    expect(Object.keys(properties)).toEqual(Object.keys(eventLineSchema.shape))
    expect([...(schema.required as string[])].sort()).toEqual(
      ['app_uuid', 'customer_id', 'event_name', 'event_time', 'schema_url', 'uuid'].sort(),
    )
    expect(schema.type).toBe('object')
    expect(schema.additionalProperties).not.toBe(false)
  })

  it('states the limits', () => {
    for (const field of ['app_uuid', 'customer_id', 'event_name'])
      expect(properties[field]).toMatchObject({ type: 'string', minLength: 1, maxLength: 128 })
    expect(properties.uuid).toMatchObject({
      type: 'string',
      minLength: 32,
      maxLength: 75,
      pattern: '^[0-9a-fA-F-]{32,75}$',
    })
    expect(properties.event_time).toMatchObject({ type: 'integer' })
    expect(properties.ltv_change).toMatchObject({ type: 'integer', default: 0 })
    expect(properties.schema_url).toMatchObject({ type: 'string', format: 'uri' })
    expect(properties.attributes).toMatchObject({
      type: 'object',
      maxProperties: 50,
      propertyNames: { type: 'string', minLength: 1, maxLength: 128 },
      additionalProperties: { anyOf: [{ type: 'string', maxLength: 128 }, { type: 'number' }] },
    })
  })

  it('has a schema_url pattern that matches what the server accepts', () => {
    const pattern = new RegExp(properties.schema_url?.pattern as string)
    expect(pattern.test('https://events.example.com/schemas/events/v0.json')).toBe(true)
    expect(pattern.test('http://h/v0.json?x=1')).toBe(true)
    expect(pattern.test('/schemas/events/v0.json')).toBe(false)
    // v1.json names the current API of the original service, with v0's fields (issue 12)
    expect(pattern.test('https://h/v1.json')).toBe(true)
    expect(pattern.test('https://h/v2.json')).toBe(false)
  })

  it('hands out a copy each time', () => {
    const a = eventJsonSchema()
    a.title = 'changed'
    ;(a.properties as Props).uuid = {}
    expect(eventJsonSchema().title).not.toBe('changed')
    expect((eventJsonSchema().properties as Props).uuid).toHaveProperty('pattern')
  })

  it('is plain JSON', () => {
    expect(JSON.parse(JSON.stringify(schema))).toEqual(schema)
  })
})
