import { html } from 'hono/html'
import type { HtmlEscapedString } from 'hono/utils/html'
import type { Session } from './session.ts'

export type Fragment = HtmlEscapedString | Promise<HtmlEscapedString>

/** The pages of the navigation, in order of use; `operator`: only with the admin token. */
export const PAGES = [
  { path: '/dashboard/health', title: 'Health', operator: false },
  { path: '/dashboard/orgs', title: 'Orgs, apps and keys', operator: false },
  { path: '/dashboard/analytics', title: 'Analytics', operator: false },
  { path: '/dashboard/dead-letters', title: 'Dead letters', operator: true },
  { path: '/dashboard/exports', title: 'Exports', operator: true },
  { path: '/dashboard/audiences', title: 'Audiences', operator: false },
  { path: '/dashboard/campaigns', title: 'Campaigns', operator: false },
  { path: '/dashboard/push', title: 'Push', operator: false },
] as const

/**
 * A whole page: one stylesheet and the scripts of the edge's own (htmx, the dashboard's), no inline
 * script or style (the CSP allows none). `session` absent: the sign-in page.
 */
export function page(
  title: string,
  session: Session | undefined,
  body: Fragment,
  scripts: readonly string[] = [],
) {
  const who = session?.who
  const nav = session
    ? PAGES.filter((p) => !p.operator || who?.kind === 'admin').map(
        (p) =>
          html`<li>
            <a href="${p.path}" ${p.title === title ? html`aria-current="page"` : ''}>${p.title}</a>
          </li>`,
      )
    : []
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <meta
          name="htmx-config"
          content='{"includeIndicatorStyles":false,"allowEval":false,"allowScriptTags":false,"historyEnabled":false,"historyCacheSize":0}'
        />
        <title>${title} · Sluice</title>
        <link rel="stylesheet" href="/dashboard/assets/dashboard.css" />
        <script src="/dashboard/assets/htmx.min.js" defer></script>
        ${scripts.map((s) => html`<script src="/dashboard/assets/${s}" defer></script>`)}
      </head>
      <body>
        <header>
          <a class="brand" href="/dashboard">Sluice</a>
          ${
            session
              ? html`<span class="who"
                    >${who?.kind === 'admin' ? 'operator (every org)' : `org ${who?.orgId} (API key)`}</span
                  >
                  <form method="post" action="/dashboard/sign-out" class="inline">
                    <input type="hidden" name="csrf" value="${session.csrf}" />
                    <button type="submit">Sign out</button>
                  </form>`
              : ''
          }
        </header>
        ${
          session
            ? html`<nav aria-label="Pages">
                <ul>
                  ${nav}
                </ul>
              </nav>`
            : ''
        }
        <main id="main">
          <h1>${title}</h1>
          ${body}
        </main>
      </body>
    </html>`
}

/** The hidden CSRF field every write form carries. */
export const csrfField = (session: Session) =>
  html`<input type="hidden" name="csrf" value="${session.csrf}" />`

/** Messages under a field (the API's own words), linked to it for screen readers. */
export function fieldErrors(errors: Record<string, string[]> | undefined, field: string, id: string) {
  const list = errors?.[field]
  if (!list?.length) return ''
  return html`<p class="error" id="${id}-error" role="alert">${list.join('; ')}</p>`
}

/** The messages that name no field of the form, at its top. */
export function formErrors(errors: Record<string, string[]> | undefined) {
  const list = errors?.['']
  if (!list?.length) return ''
  return html`<div class="error" role="alert">${list.map((m) => html`<p>${m}</p>`)}</div>`
}

/** A labelled input with its errors. */
export function input(
  label: string,
  name: string,
  options: {
    id?: string
    value?: string
    type?: string
    required?: boolean
    errors?: Record<string, string[]> | undefined
    errorField?: string
    placeholder?: string
    autocomplete?: string
  } = {},
) {
  const id = options.id ?? name
  const errorField = options.errorField ?? name
  const invalid = Boolean(options.errors?.[errorField]?.length)
  return html`<div class="field">
    <label for="${id}">${label}</label>
    <input
      id="${id}"
      name="${name}"
      type="${options.type ?? 'text'}"
      value="${options.value ?? ''}"
      ${options.required ? html` required` : ''}${options.placeholder ? html` placeholder="${options.placeholder}"` : ''}${options.autocomplete ? html` autocomplete="${options.autocomplete}"` : ''}${invalid ? html` aria-invalid="true" aria-describedby="${id}-error"` : ''}
    />
    ${fieldErrors(options.errors, errorField, id)}
  </div>`
}

/** A notice after a write (from the redirect's query string). */
export const notice = (text: string | undefined) =>
  text ? html`<p class="notice" role="status">${text}</p>` : ''

/** A table of rows; cells are fragments or text (escaped). */
export function table(caption: string, head: readonly string[], rows: readonly (readonly unknown[])[]) {
  if (rows.length === 0) return html`<p class="empty">${caption}: none yet.</p>`
  return html`<div class="table">
    <table>
      <caption>
        ${caption}
      </caption>
      <thead>
        <tr>
          ${head.map((h) => html`<th scope="col">${h}</th>`)}
        </tr>
      </thead>
      <tbody>
        ${rows.map(
          (r) =>
            html`<tr>
              ${r.map((cell) => html`<td>${cell as string}</td>`)}
            </tr>`,
        )}
      </tbody>
    </table>
  </div>`
}
