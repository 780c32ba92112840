/**
 * `starting_time_zone_id` of a campaign schedule: the spec gives an integer and no table, so this
 * is Sluice's (docs/campaigns.md, "Time zones"). Ids run westward from the International Date
 * Line, as the original dashboard's drop-down of starting time zones did: id 1 is the first zone
 * to reach any wall-clock time (UTC+14), the last id the last one (UTC−12). Each id names an IANA
 * zone, so daylight saving time is applied where that zone observes it.
 */
export const STARTING_TIME_ZONES: ReadonlyMap<number, { zone: string; label: string }> = new Map([
  [1, { zone: 'Pacific/Kiritimati', label: 'UTC+14 Line Islands (International Date Line)' }],
  [2, { zone: 'Pacific/Tongatapu', label: 'UTC+13 Tonga' }],
  [3, { zone: 'Pacific/Auckland', label: 'UTC+12/+13 New Zealand' }],
  [4, { zone: 'Pacific/Fiji', label: 'UTC+12 Fiji' }],
  [5, { zone: 'Pacific/Noumea', label: 'UTC+11 New Caledonia, Solomon Islands' }],
  [6, { zone: 'Australia/Sydney', label: 'UTC+10/+11 Sydney, Melbourne' }],
  [7, { zone: 'Australia/Brisbane', label: 'UTC+10 Brisbane, Guam' }],
  [8, { zone: 'Australia/Adelaide', label: 'UTC+9:30/+10:30 Adelaide' }],
  [9, { zone: 'Asia/Tokyo', label: 'UTC+9 Tokyo, Seoul' }],
  [10, { zone: 'Asia/Shanghai', label: 'UTC+8 Beijing, Singapore, Perth' }],
  [11, { zone: 'Asia/Bangkok', label: 'UTC+7 Bangkok, Jakarta, Hanoi' }],
  [12, { zone: 'Asia/Dhaka', label: 'UTC+6 Dhaka, Almaty' }],
  [13, { zone: 'Asia/Kathmandu', label: 'UTC+5:45 Kathmandu' }],
  [14, { zone: 'Asia/Kolkata', label: 'UTC+5:30 India' }],
  [15, { zone: 'Asia/Karachi', label: 'UTC+5 Karachi, Tashkent' }],
  [16, { zone: 'Asia/Kabul', label: 'UTC+4:30 Kabul' }],
  [17, { zone: 'Asia/Dubai', label: 'UTC+4 Dubai, Baku' }],
  [18, { zone: 'Asia/Tehran', label: 'UTC+3:30 Tehran' }],
  [19, { zone: 'Europe/Moscow', label: 'UTC+3 Moscow, Istanbul, Nairobi, Riyadh' }],
  [20, { zone: 'Europe/Athens', label: 'UTC+2/+3 Athens, Helsinki, Kyiv' }],
  [21, { zone: 'Africa/Johannesburg', label: 'UTC+2 Johannesburg, Cairo' }],
  [22, { zone: 'Europe/Paris', label: 'UTC+1/+2 Paris, Berlin, Madrid, Rome' }],
  [23, { zone: 'Africa/Lagos', label: 'UTC+1 West Central Africa' }],
  [24, { zone: 'Europe/London', label: 'UTC+0/+1 London, Dublin, Lisbon' }],
  [25, { zone: 'UTC', label: 'UTC' }],
  [26, { zone: 'Atlantic/Azores', label: 'UTC−1/+0 Azores' }],
  [27, { zone: 'Atlantic/Cape_Verde', label: 'UTC−1 Cape Verde' }],
  [28, { zone: 'Atlantic/South_Georgia', label: 'UTC−2 South Georgia' }],
  [29, { zone: 'America/Sao_Paulo', label: 'UTC−3 Brasília, Buenos Aires' }],
  [30, { zone: 'America/St_Johns', label: 'UTC−3:30/−2:30 Newfoundland' }],
  [31, { zone: 'America/Halifax', label: 'UTC−4/−3 Atlantic Time (Canada)' }],
  [32, { zone: 'America/New_York', label: 'UTC−5/−4 Eastern Time (US and Canada)' }],
  [33, { zone: 'America/Chicago', label: 'UTC−6/−5 Central Time (US and Canada)' }],
  [34, { zone: 'America/Mexico_City', label: 'UTC−6 Mexico City' }],
  [35, { zone: 'America/Denver', label: 'UTC−7/−6 Mountain Time (US and Canada)' }],
  [36, { zone: 'America/Phoenix', label: 'UTC−7 Arizona' }],
  [37, { zone: 'America/Los_Angeles', label: 'UTC−8/−7 Pacific Time (US and Canada)' }],
  [38, { zone: 'America/Anchorage', label: 'UTC−9/−8 Alaska' }],
  [39, { zone: 'Pacific/Honolulu', label: 'UTC−10 Hawaii' }],
  [40, { zone: 'Pacific/Pago_Pago', label: 'UTC−11 American Samoa' }],
  [41, { zone: 'Etc/GMT+12', label: 'UTC−12 International Date Line West' }],
])

/** Where a schedule without `starting_time_zone_id` reads a date-time that has no offset. */
export const DEFAULT_ABSOLUTE_ZONE_ID = 25
/** Where a local-time send starts when no `starting_time_zone_id` is given: the Date Line, as the original did. */
export const DEFAULT_LOCAL_START_ZONE_ID = 1

export function zoneOfId(id: number): string {
  const found = STARTING_TIME_ZONES.get(id)
  if (!found) throw new Error(`unknown starting_time_zone_id ${id}`)
  return found.zone
}
