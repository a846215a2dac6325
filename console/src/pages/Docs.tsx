import { useEffect, useMemo } from 'preact/hooks'
import { useLocation, useRoute } from 'preact-iso'
import { DOCS_BASE, renderDoc } from '../markdown.js'
import { Loading, NotFoundView, useLoad } from '../ui.js'

interface DocPage {
  path: string
  title: string
}

/** A file of the manual as the server sends it (public: the manual holds no account's data). */
async function fetchText(path: string, signal: AbortSignal): Promise<string | null> {
  const res = await fetch(DOCS_BASE + path, { signal })
  if (res.status === 404) return null
  if (!res.ok) throw new Error(`${DOCS_BASE}${path}: ${res.status} ${res.statusText}`)
  return res.text()
}

/**
 * The manual this installation carries (its docs/ folder), rendered: the list of its pages beside the page
 * chosen, `/console/docs/getting-started` for docs/getting-started.md; `/console/docs` is its index.
 */
export function Docs() {
  const { params } = useRoute()
  const { path: url } = useLocation()
  const doc = `${(params.doc ?? '').replace(/\/+$/, '') || 'README'}.md`
  const pages = useLoad(async (signal) => {
    const res = await fetch(`${DOCS_BASE}index.json`, { signal })
    if (!res.ok) throw new Error(`the manual's index: ${res.status} ${res.statusText}`)
    return ((await res.json()) as { pages: DocPage[] }).pages
  }, [])
  const text = useLoad((signal) => fetchText(doc, signal), [doc])
  const rendered = useMemo(() => (typeof text.data === 'string' ? renderDoc(text.data, doc) : null), [text.data, doc])
  useEffect(() => {
    if (!rendered) return
    document.title = `${rendered.title} · Hangar`
    // A link to a heading (`operations#logs`) lands on it once the page is there; other pages start at the top.
    const target = location.hash ? document.getElementById(decodeURIComponent(location.hash.slice(1))) : null
    if (target) target.scrollIntoView()
    else window.scrollTo(0, 0)
  }, [rendered, url])
  return (
    <section class="page docs">
      <nav class="docs-nav" aria-label="Manual">
        {pages.data ? (
          <ul>
            {pages.data.map((p) => (
              <li key={p.path}>
                <a
                  href={DOCS_BASE + p.path.replace(/\.md$/, '')}
                  class={p.path === doc ? 'active' : ''}
                  aria-current={p.path === doc ? 'page' : undefined}
                >
                  {p.title}
                </a>
              </li>
            ))}
          </ul>
        ) : (
          <Loading error={pages.error} what="the manual" />
        )}
      </nav>
      {text.data === null ? (
        <NotFoundView what={`The manual has no page ${doc}.`} back={{ href: '/console/docs', label: 'The manual' }} />
      ) : rendered ? (
        // The HTML comes from renderDoc, which escapes raw HTML and keeps links to safe addresses.
        <article class="doc" dangerouslySetInnerHTML={{ __html: rendered.html }} />
      ) : (
        <Loading error={text.error} what="the page" />
      )}
    </section>
  )
}
