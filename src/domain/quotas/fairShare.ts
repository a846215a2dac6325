/**
 * Fair share of scarce GPUs between accounts (issue 36). What is guaranteed:
 *  - An account holds at most its `gpus` quota (hard limit), whatever is free.
 *  - Up to `guaranteedGpus`, an account's GPUs are its own: they are never taken back for another account.
 *  - GPUs held beyond `guaranteedGpus` are borrowed. When an account below its guarantee needs a GPU and none
 *    is free, borrowed GPUs are taken back: workers of the account borrowing most (per weight) first, idle
 *    ones before busy ones, the newest first; a borrowed worker is retired (its job finishes first).
 *  - While such an account waits for GPUs being given back, a free GPU that fits it is not lent to another
 *    account beyond that one's guarantee.
 *  - When several accounts wait for GPUs, those below their guarantee are placed first, then the one holding
 *    the fewest GPUs per unit of weight.
 * Pods are never taken back: they hold GPUs like workers (and count as held), but only workers are retired.
 */

/** An account's standing in the fair share. */
export interface ShareStanding {
  accountId: string
  /** GPUs its workers and pods hold now. */
  held: number
  /** Null: nothing guaranteed (everything it holds is borrowed). */
  guaranteed: number | null
  weight: number
}

/** A worker that could give its GPUs back. */
export interface LendingWorker {
  id: string
  accountId: string
  gpus: number
  /** Busy with a job (retired after it) rather than idle. */
  busy: boolean
  /** Monotonic start time: the newest are taken back first. */
  startedAt: number
}

/** GPUs held beyond the guarantee. */
export function borrowedGpus(s: Pick<ShareStanding, 'held' | 'guaranteed'>): number {
  return Math.max(0, s.held - (s.guaranteed ?? 0))
}

/** Whether `need` more GPUs for this account stay within its guarantee: only then may it take borrowed GPUs back. */
export function mayReclaim(s: Pick<ShareStanding, 'held' | 'guaranteed'>, need: number): boolean {
  return s.guaranteed !== null && s.held + need <= s.guaranteed
}

/**
 * The workers to retire so that `need` GPUs come back to an account within its guarantee, or [] when the
 * borrowed GPUs are not enough (nothing is retired for a placement that would still fail). A lender never
 * gives back more than it borrowed. `fits` says whether a worker's GPUs could serve the request (type, data center).
 */
export function reclaimFrom(
  need: number,
  requester: string,
  standings: readonly ShareStanding[],
  workers: readonly LendingWorker[],
  fits: (w: LendingWorker) => boolean = () => true,
): LendingWorker[] {
  const borrowed = new Map(standings.map((s) => [s.accountId, borrowedGpus(s)]))
  const weight = new Map(standings.map((s) => [s.accountId, Math.max(1, s.weight)]))
  const candidates = workers
    .filter((w) => w.accountId !== requester && w.gpus > 0 && (borrowed.get(w.accountId) ?? 0) > 0 && fits(w))
    .sort(
      (a, b) =>
        (borrowed.get(b.accountId) ?? 0) / (weight.get(b.accountId) ?? 1) -
          (borrowed.get(a.accountId) ?? 0) / (weight.get(a.accountId) ?? 1) ||
        Number(a.busy) - Number(b.busy) ||
        b.startedAt - a.startedAt,
    )
  const out: LendingWorker[] = []
  let freed = 0
  for (const w of candidates) {
    if (freed >= need) break
    const left = borrowed.get(w.accountId) ?? 0
    if (w.gpus > left) continue
    borrowed.set(w.accountId, left - w.gpus)
    out.push(w)
    freed += w.gpus
  }
  return freed >= need ? out : []
}

/**
 * Accounts in the order they get scarce GPUs: those below their guarantee first, then fewest GPUs held per
 * unit of weight, then by id for a stable order.
 */
export function shareOrder(standings: readonly ShareStanding[]): string[] {
  const below = (s: ShareStanding) => (s.guaranteed !== null && s.held < s.guaranteed ? 0 : 1)
  return [...standings]
    .sort(
      (a, b) =>
        below(a) - below(b) ||
        a.held / Math.max(1, a.weight) - b.held / Math.max(1, b.weight) ||
        (a.accountId < b.accountId ? -1 : 1),
    )
    .map((s) => s.accountId)
}
