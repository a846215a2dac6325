import { Marked, type Tokens } from 'marked'

/**
 * The manual's Markdown (docs/ of the installation) as HTML for the console's Docs page. The docs are ours,
 * but the HTML is built to be safe anyway: raw HTML in the Markdown is shown as text (comments, such as the
 * `<!-- ci: ... -->` tags CI reads, are dropped), links go only to http(s) and mailto addresses or to other
 * pages of the manual, and images only to files of the manual.
 */

/**
 * Where the console shows a page of the manual (`getting-started.md` at `/console/docs/getting-started`), and
 * where the server serves its files (`/console/docs/getting-started.md`, `/console/docs/console-pods.png`).
 */
export const DOCS_BASE = '/console/docs/'

/** A heading's anchor, as GitHub makes it: lower case, punctuation dropped, each space a hyphen. */
export function slug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, '')
    .replace(/\s/g, '-')
}

/** The anchors of a document's headings, in order, numbered as GitHub numbers repeated ones (`-1`, `-2`). */
export function anchors(markdown: string): string[] {
  return [...renderDoc(markdown, 'page.md').html.matchAll(/<h[1-6] id="([^"]*)"/g)].map((m) => m[1])
}

/** Every link and image target of a document, outside code. */
export function linkTargets(markdown: string): string[] {
  const out: string[] = []
  const marked = new Marked()
  marked.walkTokens(marked.lexer(markdown), (t) => {
    if (t.type === 'link' || t.type === 'image') out.push((t as Tokens.Link).href)
  })
  return out
}

function unique(base: string, counts: Map<string, number>): string {
  const n = counts.get(base) ?? 0
  counts.set(base, n + 1)
  return n ? `${base}-${n}` : base
}

const escapeHtml = (s: string) =>
  s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;')

/** Decodes the entities marked writes, so that a text is escaped once when it is put into HTML again. */
const unescapeHtml = (s: string) =>
  s.replace(/&(amp|lt|gt|quot|#39);/g, (_m, e: string) => ({ amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" })[e]!)

/**
 * A path of the manual (`reference/cli.md`) from a link in `from` (`reference/configuration.md`): null when the
 * link leaves docs/ (`../README.md`, `../bench/RESULTS.md`).
 */
export function resolveDocPath(from: string, href: string): string | null {
  const parts = from.split('/').slice(0, -1)
  for (const seg of href.split('/')) {
    if (seg === '..') {
      if (parts.length === 0) return null
      parts.pop()
    } else if (seg !== '.' && seg !== '') parts.push(seg)
  }
  return parts.join('/')
}

/** A page of the manual as HTML, with its title (its first heading). `path` is its path under docs/. */
export function renderDoc(markdown: string, path: string): { html: string; title: string } {
  const counts = new Map<string, number>()
  let title = ''
  const marked = new Marked({ gfm: true })
  marked.use({
    renderer: {
      html({ text }) {
        return /^\s*<!--[\s\S]*-->\s*$/.test(text) ? '' : escapeHtml(text)
      },
      heading({ tokens, depth }) {
        const inner = this.parser.parseInline(tokens)
        const text = unescapeHtml(inner.replace(/<[^>]*>/g, ''))
        if (!title) title = text
        return `<h${depth} id="${escapeHtml(unique(slug(text), counts))}">${inner}</h${depth}>\n`
      },
      link({ href, tokens }) {
        const inner = this.parser.parseInline(tokens)
        const target = linkHref(path, href)
        if (target === null) {
          // A file of the repository outside docs/ (bench/RESULTS.md), or an address of another kind: its text only.
          const repoPath = /^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//') ? null : href
          return repoPath
            ? `<span class="doc-offsite" title="${escapeHtml(`in Hangar's repository: ${repoPath}`)}">${inner}</span>`
            : inner
        }
        const external = /^[a-z][a-z0-9+.-]*:/i.test(target)
        return `<a href="${escapeHtml(target)}"${external ? ' target="_blank" rel="noreferrer"' : ''}>${inner}</a>`
      },
      image({ href, text }) {
        const [file] = href.split('#')
        const resolved = /^[a-z][a-z0-9+.-]*:/i.test(href) ? null : resolveDocPath(path, file)
        if (resolved === null || !/\.png$/.test(resolved)) return escapeHtml(text)
        return `<img src="${escapeHtml(DOCS_BASE + resolved)}" alt="${escapeHtml(text)}">`
      },
    },
  })
  const html = marked.parse(markdown, { async: false })
  return { html, title }
}

/** Where a link of the page at `path` goes in the console: null for a file of the repository outside docs/. */
function linkHref(path: string, href: string): string | null {
  if (href.startsWith('#')) return href
  if (/^(https?|mailto):/i.test(href)) return href
  if (/^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//')) return null
  const [file, hash] = href.split('#')
  const resolved = resolveDocPath(path, file)
  if (resolved === null) return null
  if (/\.md$/.test(resolved)) return DOCS_BASE + resolved.replace(/\.md$/, '') + (hash ? `#${hash}` : '')
  if (/\.png$/.test(resolved)) return DOCS_BASE + resolved
  return null
}
