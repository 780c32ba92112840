import { z } from 'zod'

/**
 * An app's settings for the Apps and Query APIs as the admin API takes them (time zone, icon, custom
 * dimension labels): `PUT /admin/v1/apps/:app_id/settings` and the `set-app-settings` command.
 */

export const CUSTOM_DIMENSION_LABEL = /^custom_(\d|1\d)_dimension$/

export const appSettingsFields = z
  .object({
    time_zone: z.string().min(1).max(64).optional(),
    icon_url: z.string().max(2048).optional(),
    /** custom_0_dimension … custom_19_dimension → label; a null label removes it. */
    custom_dimensions: z
      .record(
        z.string().regex(CUSTOM_DIMENSION_LABEL, 'keys are custom_0_dimension … custom_19_dimension'),
        z.string().max(200).nullable(),
      )
      .optional(),
  })
  .strict()
