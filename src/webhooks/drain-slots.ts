/*
 * Fairness between accounts in a worker's webhook drains (README, "Webhooks and the event log"): each
 * endpoint is drained by a job of its own, and `webhooks.delivery_concurrency` of them run at once; this
 * decides which may start, so that one account's slow receivers cannot take every slot.
 */

/**
 * The drain slots of one worker process, counted per account: an account's first drain takes any free slot,
 * a further one only while more than `reserve` (a quarter of the slots) would stay free. So the reserve can
 * only fill with first drains of distinct accounts: starving an account takes that many others all busy.
 */
export class DrainSlots {
  private running = 0;
  private readonly byAccount = new Map<string, number>();
  private readonly reserve: number;

  constructor(private readonly size: number) {
    this.reserve = size >= 2 ? Math.max(1, Math.floor(size / 4)) : 0;
  }

  take(accountId: string): boolean {
    const mine = this.byAccount.get(accountId) ?? 0;
    const free = this.size - this.running;
    if (free <= 0 || (mine > 0 && free <= this.reserve)) return false;
    this.running++;
    this.byAccount.set(accountId, mine + 1);
    return true;
  }

  release(accountId: string): void {
    const mine = (this.byAccount.get(accountId) ?? 1) - 1;
    if (mine > 0) this.byAccount.set(accountId, mine);
    else this.byAccount.delete(accountId);
    this.running--;
  }
}
