/**
 * SQL pieces the engine-side data generators share (segmentation, query): seeded hashes evaluated
 * in the engine, so a data set is the same for the same seed and never passes through JavaScript.
 */

/** A seeded 64-bit hash of (seed, salt, idx). */
export const h = (salt: string, idx: string) => `cityHash64({seed:UInt64}, '${salt}', ${idx})`
/** A uniform float in [0, 1) from the hash. */
export const u = (salt: string, idx: string) => `(${h(salt, idx)} / 18446744073709551616.0)`
/** One of `values`, chosen by the hash. */
export const pick = (salt: string, idx: string, values: readonly string[]) =>
  `arrayElement([${values.map((v) => `'${v}'`).join(', ')}], toUInt32(${h(salt, idx)} % ${values.length}) + 1)`

/** An event's name from `r`, a hash in 0…99: the mix of a shopping app. */
export const EVENT_NAME_SQL = `multiIf(r < 35, 'screen_view', r < 60, 'view_item', r < 70, 'search', r < 80, 'add_to_cart',
    r < 85, 'purchase', r < 92, 'level_up', r < 96, 'share', 'push_open')`

/** An event's attributes from its name `n`: category and price for shopping events, a screen otherwise. */
export const EVENT_ATTRIBUTES_SQL = `if(n IN ('view_item', 'add_to_cart', 'purchase'),
      map('category', ${pick('cat', 'number', ['shoes', 'hats', 'bags', 'shirts', 'toys'])},
          'price', toString(1 + ${h('pr', 'number')} % 200)),
      map('screen', ${pick('sc', 'number', ['home', 'search', 'cart', 'profile', 'settings'])}))`
