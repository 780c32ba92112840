import { describe, expect, it } from 'vitest'
import {
  issueLines,
  validatePushRequest,
  type ValidationResult,
} from '../../pipelines/push/validate-request.ts'

const validate = (body: unknown) => validatePushRequest(body)

function errors(result: ValidationResult): string[] {
  if (result.ok) throw new Error(`expected a refusal, got ${JSON.stringify(result.request)}`)
  return issueLines(result.issues)
}

function request(result: ValidationResult) {
  if (!result.ok) throw new Error(`expected a valid request: ${issueLines(result.issues).join('; ')}`)
  return result.request
}

const profileTarget = {
  profile: {
    criteria: [{ key: 'age', scope: 'Organization', type: 'int', op: '>', values: [30] }],
    op: 'and',
  },
}

describe('push request validation: the request table', () => {
  it('accepts a minimal broadcast and normalises it', () => {
    expect(request(validate({ target_type: 'broadcast', messages: [{ alert: 'Hello' }] }))).toEqual({
      requestId: undefined,
      campaignKey: null,
      targetType: 'broadcast',
      allDevices: false,
      messages: [{ alert: 'Hello' }],
    })
  })

  it('requires target_type, one of the four', () => {
    expect(errors(validate({ messages: [{ alert: 'x' }] }))).toEqual(['target_type: target_type is required'])
    expect(errors(validate({ target_type: 'everyone', messages: [{ alert: 'x' }] }))).toEqual([
      'target_type: target_type must be one of broadcast, customer_id, audience_id, profile',
    ])
  })

  it('requires messages, a non-empty array', () => {
    expect(errors(validate({ target_type: 'broadcast' }))).toEqual(['messages: messages is required'])
    expect(errors(validate({ target_type: 'broadcast', messages: {} }))).toEqual([
      'messages: messages must be an array',
    ])
    expect(errors(validate({ target_type: 'broadcast', messages: [] }))).toEqual([
      'messages: messages must hold at least one message',
    ])
  })

  it('refuses a body that is not an object', () => {
    expect(errors(validate([1]))).toEqual(['the body must be a JSON object'])
    expect(errors(validate('push'))).toEqual(['the body must be a JSON object'])
  })

  it('allows several messages only with customer_id', () => {
    for (const type of ['broadcast', 'audience_id', 'profile']) {
      const target = type === 'audience_id' ? 1 : type === 'profile' ? profileTarget : undefined
      expect(
        errors(
          validate({
            target_type: type,
            messages: [
              { alert: 'a', target },
              { alert: 'b', target },
            ],
          }),
        ),
      ).toContain(`messages: several messages are only allowed with target_type customer_id, not ${type}`)
    }
    const ok = request(
      validate({
        target_type: 'customer_id',
        messages: [
          { target: 'ann', alert: 'a' },
          { target: 'bob', alert: 'b' },
        ],
      }),
    )
    expect(ok.messages).toEqual([
      { target: 'ann', alert: 'a' },
      { target: 'bob', alert: 'b' },
    ])
  })

  it('takes all_devices for customer_id only; true with another target type is ignored (a real client sends it)', () => {
    const broadcast = request(
      validate({ target_type: 'broadcast', all_devices: true, messages: [{ alert: 'x' }] }),
    )
    expect(broadcast.allDevices).toBe(false)
    expect(
      request(
        validate({
          target_type: 'profile',
          all_devices: true,
          messages: [{ alert: 'x', target: profileTarget }],
        }),
      ).allDevices,
    ).toBe(false)
    expect(
      request(
        validate({ target_type: 'customer_id', all_devices: true, messages: [{ target: 'c', alert: 'x' }] }),
      ).allDevices,
    ).toBe(true)
    expect(
      errors(validate({ target_type: 'customer_id', all_devices: 'yes', messages: [{ target: 'c' }] })),
    ).toEqual(['all_devices: all_devices must be true or false'])
  })

  it('refuses a campaign_key with spaces, keeps one without', () => {
    expect(
      errors(validate({ target_type: 'broadcast', campaign_key: 'spring sale', messages: [{ alert: 'x' }] })),
    ).toEqual(['campaign_key: campaign_key must not contain spaces'])
    expect(
      errors(validate({ target_type: 'broadcast', campaign_key: 'tab\there', messages: [{ alert: 'x' }] })),
    ).toEqual(['campaign_key: campaign_key must not contain spaces'])
    expect(
      request(
        validate({ target_type: 'broadcast', campaign_key: 'spring-sale_2024', messages: [{ alert: 'x' }] }),
      ).campaignKey,
    ).toBe('spring-sale_2024')
    expect(
      errors(validate({ target_type: 'broadcast', campaign_key: 7, messages: [{ alert: 'x' }] })),
    ).toEqual(['campaign_key: campaign_key must be a string'])
  })

  it('reports every problem of a body at once, each with its path', () => {
    expect(
      errors(
        validate({
          target_type: 'customer_id',
          messages: [{ alert: 5 }, { target: 'ok', ios: { badge: -1 } }, 'text'],
        }),
      ),
    ).toEqual([
      'messages[0].alert: alert must be a string or an object with title and body',
      'messages[0].target: target is required: the customer id',
      'messages[1].ios.badge: badge must not be negative',
      'messages[2]: a message must be an object',
    ])
  })
})

describe('push request validation: real clients of the original service', () => {
  it('takes request_id and campaign_key sent as null for absent', () => {
    const r = request(
      validate({
        request_id: null,
        campaign_key: null,
        target_type: 'broadcast',
        messages: [{ alert: 'x' }],
      }),
    )
    expect(r.requestId).toBeUndefined()
    expect(r.campaignKey).toBeNull()
  })

  it('takes the string "null" for no request_id and no campaign_key (a Python client sends it)', () => {
    const r = request(
      validate({
        request_id: 'null',
        campaign_key: 'null',
        target_type: 'broadcast',
        messages: [{ alert: 'x' }],
      }),
    )
    expect(r.requestId).toBeUndefined()
    expect(r.campaignKey).toBeNull()
  })

  it('takes the scope LocalyticsApplication (a Java client sends it) as the app scope', () => {
    const target = (scope: string) => ({
      profile: { criteria: [{ key: 'team', scope, type: 'string', op: 'in', values: ['x'] }], op: 'and' },
    })
    const local = request(
      validate({
        target_type: 'profile',
        messages: [{ alert: 'x', target: target('LocalyticsApplication') }],
      }),
    )
    const service = request(
      validate({ target_type: 'profile', messages: [{ alert: 'x', target: target('ServiceApplication') }] }),
    )
    expect(local.messages).toEqual(service.messages)
  })

  it('takes request ids that are not GUIDs, numbers included', () => {
    for (const id of ['order-42', 'x', '2024-05-01 12:00 retry #3', '{not-a-guid}'])
      expect(request(validate({ request_id: id, target_type: 'broadcast', messages: [{}] })).requestId).toBe(
        id,
      )
    expect(request(validate({ request_id: 12345, target_type: 'broadcast', messages: [{}] })).requestId).toBe(
      '12345',
    )
    expect(
      request(validate({ request_id: '', target_type: 'broadcast', messages: [{}] })).requestId,
    ).toBeUndefined()
    expect(
      errors(validate({ request_id: 'x'.repeat(257), target_type: 'broadcast', messages: [{}] })),
    ).toEqual(['request_id: request_id must be at most 256 characters'])
    expect(errors(validate({ request_id: { id: 1 }, target_type: 'broadcast', messages: [{}] }))).toEqual([
      'request_id: request_id must be a string',
    ])
  })

  it('treats a missing top-level alert (and null) as the silent push that "" is', () => {
    expect(
      request(validate({ target_type: 'broadcast', messages: [{ ios: { badge: 3 } }] })).messages,
    ).toEqual([{ alert: '', ios: { badge: 3, content_available: true, mutable_content: false } }])
    expect(request(validate({ target_type: 'broadcast', messages: [{ alert: null }] })).messages).toEqual([
      { alert: '' },
    ])
    expect(request(validate({ target_type: 'broadcast', messages: [{ alert: '' }] })).messages).toEqual([
      { alert: '' },
    ])
  })

  it('accepts alert: {} inside ios and android, and drops it', () => {
    const r = request(
      validate({
        target_type: 'broadcast',
        messages: [
          { alert: 'Hi', ios: { alert: {}, sound: 'default' }, android: { alert: {}, priority: 'high' } },
        ],
      }),
    )
    expect(r.messages).toEqual([
      {
        alert: 'Hi',
        ios: { sound: 'default', content_available: true, mutable_content: false },
        android: { priority: 'high' },
      },
    ])
  })

  it('refuses an alert with content inside the platform options rather than not show it', () => {
    expect(
      errors(
        validate({ target_type: 'broadcast', messages: [{ ios: { alert: { title: 'T', body: 'B' } } }] }),
      ),
    ).toEqual([
      'messages[0].ios.alert: alert is not a platform option: put the alert at the top level of the message',
    ])
  })

  it('takes null for any optional field, and ignores fields the spec does not name', () => {
    const r = request(
      validate({
        target_type: 'broadcast',
        all_devices: null,
        unknown_top: 1,
        messages: [
          {
            alert: { title: 'T', subtitle: null, body: 'B' },
            target: null,
            ios: { sound: null, badge: null, category: null, extra: null, whatever: 1 },
            android: { priority: null, extra: { ll_actions: null } },
          },
        ],
      }),
    )
    expect(r.messages).toEqual([
      {
        alert: { title: 'T', body: 'B' },
        ios: { content_available: true, mutable_content: false },
        android: { extra: {} },
      },
    ])
  })
})

describe('push request validation: targets by type', () => {
  it('broadcast: target omitted (null or "" taken as omitted)', () => {
    expect(request(validate({ target_type: 'broadcast', messages: [{ target: '' }] })).messages).toEqual([
      { alert: '' },
    ])
    expect(errors(validate({ target_type: 'broadcast', messages: [{ target: 'ann' }] }))).toEqual([
      'messages[0].target: target must be omitted when target_type is broadcast',
    ])
  })

  it('customer_id: a string of at most 128 single-byte characters; a number is its string', () => {
    expect(errors(validate({ target_type: 'customer_id', messages: [{ alert: 'x' }] }))).toEqual([
      'messages[0].target: target is required: the customer id',
    ])
    expect(errors(validate({ target_type: 'customer_id', messages: [{ target: ['a'] }] }))).toEqual([
      'messages[0].target: target must be a customer id (a string)',
    ])
    expect(errors(validate({ target_type: 'customer_id', messages: [{ target: '  ' }] }))).toEqual([
      'messages[0].target: target must not be empty',
    ])
    expect(
      request(validate({ target_type: 'customer_id', messages: [{ target: 'c'.repeat(128) }] })).messages,
    ).toEqual([{ target: 'c'.repeat(128), alert: '' }])
    expect(errors(validate({ target_type: 'customer_id', messages: [{ target: 'c'.repeat(129) }] }))).toEqual(
      ['messages[0].target: target: a customer id is at most 128 single-byte characters'],
    )
    // 64 two-byte characters are 128 bytes; 65 are not.
    expect(
      request(validate({ target_type: 'customer_id', messages: [{ target: 'é'.repeat(64) }] })).messages,
    ).toHaveLength(1)
    expect(
      errors(validate({ target_type: 'customer_id', messages: [{ target: 'é'.repeat(65) }] })),
    ).toHaveLength(1)
    expect(request(validate({ target_type: 'customer_id', messages: [{ target: 42 }] })).messages).toEqual([
      { target: '42', alert: '' },
    ])
  })

  it('customer_id: one message per customer in a request (one delivery per install)', () => {
    expect(
      errors(
        validate({
          target_type: 'customer_id',
          messages: [
            { target: 'ann', alert: 'a' },
            { target: 'bob', alert: 'b' },
            { target: 'ann', alert: 'c' },
          ],
        }),
      ),
    ).toEqual([
      'messages[2].target: customer ann is already the target of messages[0]; send one message per customer in a request',
    ])
  })

  it('audience_id: a positive integer (digits in a string taken as the number)', () => {
    expect(request(validate({ target_type: 'audience_id', messages: [{ target: 7 }] })).messages).toEqual([
      { target: 7, alert: '' },
    ])
    expect(request(validate({ target_type: 'audience_id', messages: [{ target: '12' }] })).messages).toEqual([
      { target: 12, alert: '' },
    ])
    for (const bad of [0, -3, 1.5, 'seven', { id: 1 }])
      expect(errors(validate({ target_type: 'audience_id', messages: [{ target: bad }] }))).toEqual([
        'messages[0].target: target must be an audience id (a positive integer)',
      ])
    expect(errors(validate({ target_type: 'audience_id', messages: [{}] }))).toEqual([
      'messages[0].target: target is required: the audience id',
    ])
  })

  it('profile: {profile: {criteria, op}}, every op of the spec by type, canonical criteria', () => {
    expect(errors(validate({ target_type: 'profile', messages: [{}] }))).toEqual([
      'messages[0].target: target is required: {"profile": {"criteria": [...], "op": "and"}}',
    ])
    const criteria = [
      { key: 'tier', scope: 'ServiceApplication', type: 'string', op: 'in', values: ['gold', 'silver'] },
      { key: 'tier', scope: 'ServiceApplication', type: 'string', op: 'not_in', values: ['lead'] },
      { key: 'nick', scope: 'Organization', type: 'string', op: 'is_null' },
      { key: 'nick', scope: 'Organization', type: 'string', op: 'is_not_null' },
      { key: 'age', scope: 'Organization', type: 'int', op: '<', values: [65] },
      { key: 'age', scope: 'Organization', type: 'int', op: '>', values: [17] },
      { key: 'age', scope: 'Organization', type: 'int', op: '<=', values: [64] },
      { key: 'age', scope: 'Organization', type: 'int', op: '>=', values: [18] },
      { key: 'age', scope: 'Organization', type: 'int', op: 'between', values: [18, 64] },
      { key: 'age', scope: 'Organization', type: 'int', op: 'in', values: [20, 30] },
      { key: 'age', scope: 'Organization', type: 'int', op: 'not_in', values: [40] },
      { key: 'joined', scope: 'ServiceApplication', type: 'date', op: '>=', values: ['2024-01-01'] },
      {
        key: 'joined',
        scope: 'ServiceApplication',
        type: 'date',
        op: 'between',
        values: ['2024-01-01', '2024-12-31'],
      },
      { key: 'joined', scope: 'ServiceApplication', type: 'date', op: 'is_not_null' },
    ]
    const r = request(
      validate({
        target_type: 'profile',
        messages: [{ alert: 'x', target: { profile: { criteria, op: 'or' } } }],
      }),
    )
    const target = r.messages[0]!.target as { operator: string; criteria: { key: string; scope: string }[] }
    expect(target.operator).toBe('or')
    expect(target.criteria).toHaveLength(criteria.length)
    expect(target.criteria.map((c) => [c.key, c.scope])).toEqual(
      criteria.map((c) => [c.key, c.scope === 'Organization' ? 'org' : 'app']),
    )
  })

  it('profile: a scalar where values is an array is that one value (real clients)', () => {
    const scalar = request(
      validate({
        target_type: 'profile',
        messages: [
          {
            target: {
              profile: {
                criteria: [{ key: 'tier', scope: 'Organization', type: 'string', op: 'in', values: 'gold' }],
                op: 'and',
              },
            },
          },
        ],
      }),
    )
    const array = request(
      validate({
        target_type: 'profile',
        messages: [
          {
            target: {
              profile: {
                criteria: [
                  { key: 'tier', scope: 'Organization', type: 'string', op: 'in', values: ['gold'] },
                ],
                op: 'and',
              },
            },
          },
        ],
      }),
    )
    expect(scalar.messages).toEqual(array.messages)
  })

  it('profile: problems of the criteria are named under the message path', () => {
    const bad = (criterion: Record<string, unknown>) =>
      errors(
        validate({
          target_type: 'profile',
          messages: [{ target: { profile: { criteria: [criterion], op: 'and' } } }],
        }),
      )
    const base = { key: 'age', scope: 'Organization', type: 'int' }
    for (const lines of [
      bad({ ...base, op: 'between', values: [1] }),
      bad({ ...base, op: 'like', values: [1] }),
      bad({ ...base, type: 'boolean', op: 'in', values: [true] }),
      bad({ ...base, scope: 'Planet', op: 'in', values: [1] }),
      bad({ ...base, op: '>' }),
      bad({ key: 'tier', scope: 'Organization', type: 'string', op: '<', values: ['a'] }),
    ]) {
      expect(lines.length).toBeGreaterThan(0)
      for (const line of lines) expect(line).toMatch(/^messages\[0\]\.target/)
    }
    expect(errors(validate({ target_type: 'profile', messages: [{ target: 'x' }] }))[0]).toMatch(
      /^messages\[0\]\.target/,
    )
  })
})

describe('push request validation: the message, iOS and Android tables', () => {
  const one = (message: unknown) => validate({ target_type: 'broadcast', messages: [message] })

  it('alert: a string, or {title, subtitle?, body}', () => {
    expect(request(one({ alert: { title: 'T', subtitle: 'S', body: 'B' } })).messages[0]!.alert).toEqual({
      title: 'T',
      subtitle: 'S',
      body: 'B',
    })
    expect(errors(one({ alert: { body: 'B' } }))).toEqual(['messages[0].alert.title: title is required'])
    expect(errors(one({ alert: { title: 'T' } }))).toEqual(['messages[0].alert.body: body is required'])
    expect(errors(one({ alert: { title: 'T', body: 'B', subtitle: 3 } }))).toEqual([
      'messages[0].alert.subtitle: subtitle must be a string',
    ])
    expect(errors(one({ alert: ['x'] }))).toEqual([
      'messages[0].alert: alert must be a string or an object with title and body',
    ])
  })

  it('ios: sound, badge, category, the two flags with their defaults, extra with the ll_ keys', () => {
    expect(
      request(
        one({
          ios: {
            sound: 'chime.caf',
            badge: 0,
            category: 'reply',
            content_available: false,
            mutable_content: true,
            extra: {
              ll_deep_link_url: 'app://x',
              ll_attachment_url: 'https://e.x/a.png',
              ll_attachment_type: 'png',
              own: { n: 1 },
            },
          },
        }),
      ).messages[0]!.ios,
    ).toEqual({
      sound: 'chime.caf',
      badge: 0,
      category: 'reply',
      content_available: false,
      mutable_content: true,
      extra: {
        ll_deep_link_url: 'app://x',
        ll_attachment_url: 'https://e.x/a.png',
        ll_attachment_type: 'png',
        own: { n: 1 },
      },
    })
    expect(request(one({ ios: {} })).messages[0]!.ios).toEqual({
      content_available: true,
      mutable_content: false,
    })
    expect(errors(one({ ios: { badge: 1.5 } }))).toEqual(['messages[0].ios.badge: badge must be an integer'])
    expect(errors(one({ ios: { badge: '3' } }))).toEqual(['messages[0].ios.badge: badge must be an integer'])
    expect(errors(one({ ios: { sound: 1 } }))).toEqual(['messages[0].ios.sound: sound must be a string'])
    expect(errors(one({ ios: { content_available: 'yes' } }))).toEqual([
      'messages[0].ios.content_available: content_available must be true or false',
    ])
    expect(errors(one({ ios: { mutable_content: 1 } }))).toEqual([
      'messages[0].ios.mutable_content: mutable_content must be true or false',
    ])
    expect(errors(one({ ios: { extra: { ll_deep_link_url: 5 } } }))).toEqual([
      'messages[0].ios.extra.ll_deep_link_url: ll_deep_link_url must be a string',
    ])
    expect(errors(one({ ios: { extra: 'x' } }))).toEqual(['messages[0].ios.extra: extra must be an object'])
    expect(errors(one({ ios: 'x' }))).toEqual(['messages[0].ios: ios must be an object'])
  })

  it('android: priority high|normal, extra with ll_actions of title/icon/deeplink', () => {
    expect(
      request(
        one({
          android: {
            priority: 'HIGH',
            extra: {
              ll_deep_link_url: 'app://y',
              ll_attachment_url: 'https://e.x/b.jpg',
              ll_actions: [{ title: 'Open', icon: 'ic_open', deeplink: 'app://open' }, { title: 'Later' }],
              k: 'v',
            },
          },
        }),
      ).messages[0]!.android,
    ).toEqual({
      priority: 'high',
      extra: {
        ll_deep_link_url: 'app://y',
        ll_attachment_url: 'https://e.x/b.jpg',
        ll_actions: [{ title: 'Open', icon: 'ic_open', deeplink: 'app://open' }, { title: 'Later' }],
        k: 'v',
      },
    })
    expect(
      request(one({ android: { extra: { ll_actions: { title: 'Solo' } } } })).messages[0]!.android,
    ).toEqual({
      extra: { ll_actions: [{ title: 'Solo' }] },
    })
    expect(errors(one({ android: { priority: 'urgent' } }))).toEqual([
      'messages[0].android.priority: priority must be high or normal',
    ])
    expect(errors(one({ android: { extra: { ll_actions: [{ icon: 'x' }] } } }))).toEqual([
      'messages[0].android.extra.ll_actions[0].title: title is required',
    ])
    expect(errors(one({ android: { extra: { ll_actions: [{ title: 'T', deeplink: 3 }] } } }))).toEqual([
      'messages[0].android.extra.ll_actions[0].deeplink: deeplink must be a string',
    ])
    expect(errors(one({ android: { extra: { ll_actions: 'x' } } }))).toEqual([
      'messages[0].android.extra.ll_actions: ll_actions must be an array of actions',
    ])
  })
})
