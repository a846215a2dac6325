import { Readable } from 'node:stream'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { AuditPage, AuditQuery } from '../../contract/audit.js'
import type { AppDeps } from '../app.js'

const tags = ['audit']
const NDJSON = 'application/x-ndjson'

/** The audit log: pages of JSON, or every matching entry as JSON lines. */
export const auditRoutes =
  ({ audit }: AppDeps): FastifyPluginAsyncTypebox =>
  async (app) => {
    app.get(
      '/v2/audit',
      {
        schema: {
          tags,
          summary: 'Read the audit log',
          description:
            "Changes made through the API, newest first: the caller's account's own (the admin's key: every account's, or one `account`'s). `format=jsonl` or `Accept: application/x-ndjson` exports every matching entry as JSON lines.",
          querystring: AuditQuery,
          response: { 200: AuditPage },
        },
      },
      async (req, reply) => {
        const jsonl = req.query.format === 'jsonl' || (req.query.format === undefined && accepts(req.headers.accept))
        if (!jsonl) return audit.page(req.principal, req.query)
        // The first read runs before the answer starts, so a refusal (another account's log) is still a problem.
        const entries = audit.export(req.principal, req.query)
        const first = await entries.next()
        async function* lines() {
          if (first.done) return
          yield `${JSON.stringify(first.value)}\n`
          for await (const e of entries) yield `${JSON.stringify(e)}\n`
        }
        // A stream is sent as it is (the 200 schema describes the JSON page, not these lines).
        return reply.type(NDJSON).send(Readable.from(lines()) as never)
      },
    )
  }

function accepts(accept: string | undefined): boolean {
  return accept?.split(',').some((t) => t.split(';')[0].trim().toLowerCase() === NDJSON) ?? false
}
