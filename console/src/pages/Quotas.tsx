import { useState } from 'preact/hooks'
import type { AccountQuotas, AccountQuotasList, SetQuotas } from '../../../src/contract/quota.js'
import { useSession } from '../session.js'
import { Field, Loading, Page, Problems, inputValue, useAction, useLoad, when } from '../ui.js'

const LIMITS = [
  ['gpus', 'GPUs'],
  ['workers', 'Workers (workers.max summed)'],
  ['pods', 'Pods'],
  ['networkVolumeGb', 'Network volume GB'],
  ['spendPerHour', 'Spend per hour, USD'],
  ['spendPerMonth', 'Spend per month, USD'],
] as const

const usage = (u: { use: number; limit: number | null }) => `${u.use} / ${u.limit ?? 'no limit'}`

/** The account's use against its quotas; with an admin key, every account's, and a form to set them. */
export function Quotas() {
  const { client, admin } = useSession()
  const mine = useLoad((signal) => client.get<AccountQuotas>('/v2/account/quotas', signal), [], 10_000)
  const all = useLoad(
    (signal) => (admin ? client.get<AccountQuotasList>('/v2/admin/quotas', signal) : Promise.resolve(null)),
    [admin],
    10_000,
  )
  return (
    <Page title="Quotas">
      {!mine.data ? <Loading error={mine.error} what="quotas" /> : <Usage q={mine.data} />}
      {admin && (
        <>
          <h2>Every account</h2>
          {!all.data ? (
            <Loading error={all.error} what="quotas of every account" />
          ) : (
            <div class="table-wrap">
              <table>
                <thead>
                  <tr>
                    <th>Account</th>
                    {LIMITS.map(([k, label]) => (
                      <th key={k}>{label}</th>
                    ))}
                    <th>Guaranteed GPUs</th>
                    <th>Weight</th>
                  </tr>
                </thead>
                <tbody>
                  {all.data.accounts.map((a) => (
                    <tr key={a.accountId}>
                      <td>{a.accountName}</td>
                      {LIMITS.map(([k]) => (
                        <td key={k}>{usage(a.quotas[k])}</td>
                      ))}
                      <td>{a.fairShare.guaranteedGpus ?? '-'}</td>
                      <td>{a.fairShare.weight}</td>
                    </tr>
                  ))}
                </tbody>
              </table>
            </div>
          )}
          <SetForm accounts={all.data?.accounts ?? []} saved={() => (all.reload(), mine.reload())} />
        </>
      )}
    </Page>
  )
}

function Usage({ q }: { q: AccountQuotas }) {
  return (
    <>
      <p class="muted">
        Account {q.accountName}. A request past a quota is refused; at a spend limit nothing new starts and running work{' '}
        {q.atSpendLimit === 'STOP' ? 'is stopped' : 'finishes'}.
        {q.spendLimitReached && <strong> The {q.spendLimitReached} limit is reached.</strong>}
      </p>
      <div class="table-wrap">
        <table>
          <thead>
            <tr>
              <th>Quota</th>
              <th>In use</th>
              <th>Limit</th>
            </tr>
          </thead>
          <tbody>
            {LIMITS.map(([k, label]) => (
              <tr key={k}>
                <td>{label}</td>
                <td>{q.quotas[k].use}</td>
                <td>{q.quotas[k].limit ?? 'no limit'}</td>
              </tr>
            ))}
          </tbody>
        </table>
      </div>
      <p class="muted small">
        Fair share: {q.fairShare.guaranteedGpus ?? 0} GPUs guaranteed, weight {q.fairShare.weight},{' '}
        {q.fairShare.borrowedGpus} borrowed (given back first when others need their share).
        {q.updatedAt && ` Set ${when(q.updatedAt)}.`}
      </p>
    </>
  )
}

type Form = Record<(typeof LIMITS)[number][0] | 'guaranteedGpus' | 'weight', string> & {
  account: string
  atSpendLimit: 'FINISH' | 'STOP'
}

const EMPTY: Form = {
  account: '',
  gpus: '',
  workers: '',
  pods: '',
  networkVolumeGb: '',
  spendPerHour: '',
  spendPerMonth: '',
  guaranteedGpus: '',
  weight: '1',
  atSpendLimit: 'FINISH',
}

/** Sets an account's whole set of quotas (PUT): an empty field is no limit. */
function SetForm({ accounts, saved }: { accounts: AccountQuotas[]; saved: () => void }) {
  const { client } = useSession()
  const [form, setForm] = useState<Form>(EMPTY)
  const pick = (name: string) => {
    const a = accounts.find((x) => x.accountName === name)
    if (!a) return setForm({ ...form, account: name })
    const s = (v: number | null) => (v === null ? '' : String(v))
    setForm({
      account: name,
      ...(Object.fromEntries(LIMITS.map(([k]) => [k, s(a.quotas[k].limit)])) as Record<
        (typeof LIMITS)[number][0],
        string
      >),
      guaranteedGpus: s(a.fairShare.guaranteedGpus),
      weight: String(a.fairShare.weight),
      atSpendLimit: a.atSpendLimit,
    })
  }
  const save = useAction(async () => {
    // An empty field is no limit; anything else goes as typed, so the server names a wrong value.
    const num = (v: string) => (v.trim() === '' ? null : Number(v))
    const body = {
      ...Object.fromEntries(LIMITS.map(([k]) => [k, num(form[k])])),
      guaranteedGpus: num(form.guaranteedGpus),
      weight: num(form.weight) ?? 1,
      atSpendLimit: form.atSpendLimit,
    } as SetQuotas
    await client.put<AccountQuotas>(`/v2/admin/accounts/${encodeURIComponent(form.account)}/quotas`, body)
    saved()
  })
  const fields = [...LIMITS.map(([k]) => k), 'guaranteedGpus', 'weight', 'atSpendLimit']
  return (
    <>
      <h2>Set quotas</h2>
      <form
        class="form"
        noValidate
        onSubmit={(e) => {
          e.preventDefault()
          void save.run()
        }}
      >
        <Problems error={save.error} fields={fields} />
        <Field label="Account" name="account">
          <select name="account" value={form.account} onChange={(e) => pick(inputValue(e))}>
            <option value="">(choose)</option>
            {accounts.map((a) => (
              <option key={a.accountId} value={a.accountName}>
                {a.accountName}
              </option>
            ))}
          </select>
        </Field>
        {LIMITS.map(([k, label]) => (
          <Field key={k} label={label} name={k} error={save.error} hint="empty: no limit">
            <input
              name={k}
              type="number"
              min="0"
              value={form[k]}
              onInput={(e) => setForm({ ...form, [k]: inputValue(e) })}
            />
          </Field>
        ))}
        <Field label="At the spend limit" name="atSpendLimit" error={save.error}>
          <select
            name="atSpendLimit"
            value={form.atSpendLimit}
            onChange={(e) => setForm({ ...form, atSpendLimit: inputValue<'FINISH' | 'STOP'>(e) })}
          >
            <option value="FINISH">running work finishes</option>
            <option value="STOP">running work is stopped</option>
          </select>
        </Field>
        <Field label="Guaranteed GPUs (fair share)" name="guaranteedGpus" error={save.error} hint="empty: none">
          <input
            name="guaranteedGpus"
            type="number"
            min="0"
            value={form.guaranteedGpus}
            onInput={(e) => setForm({ ...form, guaranteedGpus: inputValue(e) })}
          />
        </Field>
        <Field label="Weight (fair share)" name="weight" error={save.error}>
          <input
            name="weight"
            type="number"
            min="1"
            value={form.weight}
            onInput={(e) => setForm({ ...form, weight: inputValue(e) })}
          />
        </Field>
        <div class="form-actions">
          <button class="primary" type="submit" disabled={save.busy || form.account === ''}>
            Save quotas
          </button>
        </div>
      </form>
    </>
  )
}
