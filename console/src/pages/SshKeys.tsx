import { useEffect, useState } from 'preact/hooks'
import type { SshKeys as SshKeysBody } from '../../../src/contract/sshKeys.js'
import { useSession } from '../session.js'
import { Field, Loading, Page, Problems, useAction, useLoad, inputValue } from '../ui.js'

/** The account's SSH public keys, edited as one list (PUT replaces it). */
export function SshKeys() {
  const { client } = useSession()
  const current = useLoad((signal) => client.get<SshKeysBody>('/v2/account/ssh-keys', signal), [])
  const [text, setText] = useState('')
  const [saved, setSaved] = useState(false)
  useEffect(() => {
    if (current.data) setText(current.data.keys.join('\n'))
  }, [current.data])
  const save = useAction(async () => {
    const keys = text
      .split('\n')
      .map((l) => l.trim())
      .filter(Boolean)
    const r = await client.put<SshKeysBody>('/v2/account/ssh-keys', { keys })
    setText(r.keys.join('\n'))
    setSaved(true)
  })
  return (
    <Page title="SSH keys">
      {!current.data ? (
        <Loading error={current.error} what="SSH keys" />
      ) : (
        <form
          class="form"
          onSubmit={(e) => {
            e.preventDefault()
            setSaved(false)
            void save.run()
          }}
        >
          <Problems error={save.error} fields={['keys']} />
          <Field
            label="Public keys, one per line"
            name="keys"
            error={save.error}
            hint="Pods created later with SSH get these keys."
          >
            <textarea name="keys" class="mono" rows={8} value={text} onInput={(e) => setText(inputValue(e))} />
          </Field>
          <div class="form-actions">
            <button class="primary" type="submit" disabled={save.busy}>
              Save keys
            </button>
            {saved && <span class="ok">Saved.</span>}
          </div>
        </form>
      )}
    </Page>
  )
}
