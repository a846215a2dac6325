import type { Account, ApiKey, CreateAccount, CreateApiKey, CreatedApiKey } from '../contract/admin.js'
import type { Problem } from '../contract/problem.js'

/** Raised for any non-2xx answer, carrying the problem body. */
export class HangarApiError extends Error {
  constructor(readonly problem: Problem) {
    super(`${problem.status} ${problem.title}: ${problem.detail}${problem.errors?.length ? '\n  ' + problem.errors.join('\n  ') : ''}`)
  }
}

/** A small typed client of the management API, used by the CLI. */
export class HangarClient {
  constructor(
    private readonly baseUrl: string,
    private readonly apiKey: string,
  ) {}

  createAccount(body: CreateAccount): Promise<Account> {
    return this.call('POST', '/v2/admin/accounts', body)
  }
  async listAccounts(): Promise<Account[]> {
    return (await this.call<{ accounts: Account[] }>('GET', '/v2/admin/accounts')).accounts
  }
  createKey(body: CreateApiKey): Promise<CreatedApiKey> {
    return this.call('POST', '/v2/admin/keys', body)
  }
  async listKeys(account?: string): Promise<ApiKey[]> {
    return (await this.call<{ keys: ApiKey[] }>('GET', `/v2/admin/keys${account ? `?account=${encodeURIComponent(account)}` : ''}`)).keys
  }
  revokeKey(id: string): Promise<ApiKey> {
    return this.call('POST', `/v2/admin/keys/${encodeURIComponent(id)}/revoke`, {})
  }

  private async call<T>(method: string, path: string, body?: unknown): Promise<T> {
    let res: Response
    try {
      res = await fetch(this.baseUrl + path, {
        method,
        headers: { authorization: `Bearer ${this.apiKey}`, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
        body: body !== undefined ? JSON.stringify(body) : undefined,
      })
    } catch (err) {
      throw new Error(`cannot reach Hangar at ${this.baseUrl}: ${(err as Error).cause ?? (err as Error).message}`)
    }
    const text = await res.text()
    const json = text ? JSON.parse(text) : undefined
    if (!res.ok) throw new HangarApiError(json ?? { title: res.statusText, status: res.status, detail: text })
    return json as T
  }
}
