import { duplicateRedis, type RedisClient } from '../platform/redis.js';
import type { Logger } from '../platform/logger.js';
import { LookalikeIndex, type TrustedAddresses } from './lookalike.js';
import { normaliseAddress } from './addresses.js';
import type { ListEntry } from './entities.js';
import { presentListEntry, presentSanctionMatch } from './present.js';
import type { ListEntryBody, SanctionMatchBody } from './schemas.js';
import type { ListsService, ListStatus, SanctionMatch } from './service.js';

/** What the lists say for one account, answered from memory (no query per assessment). */
export interface AccountListView {
  /** Deny, allow and sanctions for one target on one chain (a chain's own entry beats an every-chain one). */
  status(chain: string, target: string): ListStatus;
  /** Why an address is flagged for this account: sanctioned or deny-listed (null: it is not). */
  flagged(
    chain: string,
    address: string,
  ): { sanctioned: SanctionMatchBody | null; denied: ListEntryBody | null };
  /** The allow-listed addresses that apply on `chain`, indexed: the trusted set of `lookalike_address`. */
  allowed(chain: string): TrustedAddresses;
}

interface AccountLists {
  deny: Map<string, ListEntry[]>;
  allow: Map<string, ListEntry[]>;
  /** The allow list by shown digits, built with the lists: no pass over the list per assessment. */
  lookalikes: LookalikeIndex;
}

interface Loaded<T> {
  at: number;
  value: Promise<T>;
}

/** A message on the change channel: `sanctions`, or `account:<id>`. */
const SANCTIONS = 'sanctions';
const ACCOUNT = 'account:';

export type ListChange = { accountId: string } | 'sanctions';

/** The Redis channel list changes are announced on. */
export const listsChannel = (redisKeyPrefix: string): string => `${redisKeyPrefix}lists:changed`;

const messageOf = (scope: ListChange) => (scope === 'sanctions' ? SANCTIONS : `${ACCOUNT}${scope.accountId}`);

/**
 * Tells every API replica that lists changed (also used by the `lists import` CLI, which holds no cache).
 * Resolves once published; a failed publish is logged, never thrown (replicas catch up within the cache age).
 */
export async function publishListChange(
  redis: RedisClient,
  channel: string,
  scope: ListChange,
  logger: Logger,
): Promise<void> {
  await redis
    .publish(channel, messageOf(scope))
    .then(() => undefined)
    .catch((err: Error) =>
      logger.warn(
        { err: { message: err.message } },
        'could not announce a list change; other replicas pick it up within the cache age',
      ),
    );
}
const MAX_ACCOUNTS = 10_000;

/**
 * The sanctions index (shared) and each account's deny and allow lists, kept in memory for the risk engine:
 * a cached preflight costs no database query. A change (entry added or removed, sanctions imported) clears
 * the copy in this process at once and is published on Redis, so every other replica drops its copy within
 * milliseconds; `maxAgeMs` bounds staleness should a message be missed (Redis unreachable at that moment),
 * and a reconnect of the subscriber drops everything. Each account's lists are loaded on their own: one
 * account's entries never answer for another.
 */
export class ListsCache {
  private sanctions: Loaded<Map<string, SanctionMatch>> | undefined;
  private readonly accounts = new Map<string, Loaded<AccountLists>>();
  private subscriber: RedisClient | undefined;

  constructor(
    private readonly lists: ListsService,
    private readonly opts: {
      redis: RedisClient;
      channel: string;
      logger: Logger;
      maxAgeMs?: number;
    },
  ) {}

  /**
   * Subscribes to the change channel (API processes; a CLI only publishes). Never waits for Redis: an API
   * starting while Redis is down still starts (and answers 503 where Redis is needed); the subscription is
   * made when Redis comes back. Resolves once subscribed (or the attempt failed, logged); callers on the
   * start-up path do not wait for it.
   */
  start(): Promise<void> {
    if (this.subscriber) return Promise.resolve(); // the `all` role starts it twice (api and worker)
    const sub = duplicateRedis(this.opts.redis, { enableOfflineQueue: true, maxRetriesPerRequest: null });
    this.subscriber = sub;
    sub.on('error', (err: Error) =>
      this.opts.logger.warn({ err: { message: err.message } }, 'redis (lists subscriber) error'),
    );
    let ready = false;
    sub.on('ready', () => {
      // A reconnect may have missed messages: forget everything rather than serve a stale list.
      if (ready) this.clear();
      ready = true;
    });
    sub.on('message', (_channel: string, message: string) => this.drop(message));
    return sub.subscribe(this.opts.channel).then(
      () => undefined,
      (err: Error) =>
        this.opts.logger.warn({ err: { message: err.message } }, 'lists change channel not subscribed'),
    );
  }

  /** A subscriber has nothing to flush, and quit() would wait for a Redis that is down. */
  stop(): void {
    this.subscriber?.disconnect();
  }

  /** Announces a change: this process forgets at once, the others when the message arrives. */
  async changed(scope: ListChange): Promise<void> {
    this.drop(messageOf(scope));
    await publishListChange(this.opts.redis, this.opts.channel, scope, this.opts.logger);
  }

  /** The account's view, loading what is missing or too old. Database errors propagate (503). */
  async view(accountId: string): Promise<AccountListView> {
    const [sanctions, lists] = await Promise.all([this.sanctionsIndex(), this.accountLists(accountId)]);
    // Presented when asked for (rarely: most targets are on no list), as the risk engine shows them.
    const pick = (entries: ListEntry[] | undefined, chain: string) => {
      const entry = entries?.find((e) => e.chain === chain) ?? entries?.find((e) => !e.chain);
      return entry ? presentListEntry(entry) : null;
    };
    const sanctioned = (key: string) => {
      const match = sanctions.get(key);
      return match ? presentSanctionMatch(match) : null;
    };
    return {
      status: (chain, target) => {
        const key = normaliseAddress(target);
        return {
          denied: pick(lists.deny.get(key), chain),
          allowed: pick(lists.allow.get(key), chain),
          sanctioned: sanctioned(key),
        };
      },
      flagged: (chain, address) => {
        const key = normaliseAddress(address);
        return { sanctioned: sanctioned(key), denied: pick(lists.deny.get(key), chain) };
      },
      allowed: (chain) => lists.lookalikes.on(chain),
    };
  }

  private get maxAgeMs(): number {
    return this.opts.maxAgeMs ?? 30_000;
  }

  private fresh<T>(loaded: Loaded<T> | undefined): loaded is Loaded<T> {
    return loaded !== undefined && Date.now() - loaded.at < this.maxAgeMs;
  }

  private sanctionsIndex(): Promise<Map<string, SanctionMatch>> {
    if (this.fresh(this.sanctions)) return this.sanctions.value;
    const loaded: Loaded<Map<string, SanctionMatch>> = { at: Date.now(), value: this.lists.sanctionsIndex() };
    this.sanctions = loaded;
    loaded.value.catch(() => {
      if (this.sanctions === loaded) this.sanctions = undefined;
    });
    return loaded.value;
  }

  private accountLists(accountId: string): Promise<AccountLists> {
    const current = this.accounts.get(accountId);
    if (this.fresh(current)) return current.value;
    const loaded: Loaded<AccountLists> = {
      at: Date.now(),
      value: this.lists.orgEntries(accountId).then((entries) => {
        const out: AccountLists = { deny: new Map(), allow: new Map(), lookalikes: new LookalikeIndex() };
        for (const e of entries) {
          const map = e.list === 'deny' ? out.deny : out.allow;
          const key = normaliseAddress(e.target);
          map.set(key, [...(map.get(key) ?? []), e]);
        }
        // Trust order is the allow list's order (newest first), each address at its first entry.
        for (const [target, allowed] of out.allow)
          out.lookalikes.add(
            target,
            allowed.map((e) => e.chain ?? null),
          );
        return out;
      }),
    };
    this.accounts.delete(accountId);
    this.accounts.set(accountId, loaded);
    if (this.accounts.size > MAX_ACCOUNTS) this.accounts.delete(this.accounts.keys().next().value!);
    loaded.value.catch(() => {
      if (this.accounts.get(accountId) === loaded) this.accounts.delete(accountId);
    });
    return loaded.value;
  }

  private drop(message: string): void {
    if (message === SANCTIONS) this.sanctions = undefined;
    else if (message.startsWith(ACCOUNT)) this.accounts.delete(message.slice(ACCOUNT.length));
  }

  private clear(): void {
    this.sanctions = undefined;
    this.accounts.clear();
  }
}
