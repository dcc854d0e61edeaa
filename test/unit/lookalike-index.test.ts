import { createHash } from 'node:crypto';
import { getAddress } from 'viem';
import { describe, expect, it } from 'vitest';
import { ListsCache } from '../../src/lists/cache.js';
import type { ListEntry } from '../../src/lists/entities.js';
import type { ListsService } from '../../src/lists/service.js';
import { createLogger } from '../../src/platform/logger.js';
import { findLookalike, LookalikeIndex } from '../../src/lists/lookalike.js';

/** A deterministic lower-case EVM address per label. */
const addressOf = (label: string) =>
  `0x${createHash('sha256').update(`lookalike-index:${label}`).digest('hex').slice(0, 40)}`;

/** Same first 4 and last 4 hex digits as `a`, a middle of its own. */
const twinOf = (a: string, label: string) =>
  `${a.slice(0, 6)}${createHash('sha256').update(`twin:${label}`).digest('hex').slice(0, 32)}${a.slice(-4)}`;

const entry = (target: string, chain: string | null, i: number): ListEntry => ({
  id: `lst_${i}`,
  accountId: 'acc_test',
  list: 'allow',
  target,
  chain,
  label: null,
  reason: null,
  createdAt: new Date(0),
  createdBy: 'test',
});

/** A ListsCache over fixed entries (newest first, as ListsService.orgEntries returns them). */
async function viewOf(entries: ListEntry[]) {
  const lists = {
    orgEntries: () => Promise.resolve(entries),
    sanctionsIndex: () => Promise.resolve(new Map()),
  } as unknown as ListsService;
  const cache = new ListsCache(lists, {
    redis: undefined as never, // view() never touches Redis
    channel: 'unused',
    logger: createLogger('silent'),
  });
  return cache.view('acc_test');
}

describe('LookalikeIndex', () => {
  const trusted = addressOf('trusted');
  const twin = twinOf(trusted, 'attacker');

  it('answers as the plain list does: EIP-55 match, the trusted address itself is no look-alike', () => {
    const index = new LookalikeIndex();
    index.add(trusted, [null]);
    expect(findLookalike(twin, index.on('ethereum'))).toBe(getAddress(trusted));
    expect(findLookalike(twin.toUpperCase().replace('0X', '0x'), index.on('base'))).toBe(getAddress(trusted));
    expect(findLookalike(trusted, index.on('ethereum'))).toBeNull();
    expect(findLookalike(getAddress(trusted), index.on('ethereum'))).toBeNull();
    expect(findLookalike(addressOf('unrelated'), index.on('ethereum'))).toBeNull();
    expect(findLookalike('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', index.on('ethereum'))).toBeNull();
  });

  it('keeps a chain entry to its chain; an entry without chain applies on every chain', () => {
    const index = new LookalikeIndex();
    index.add(` ${getAddress(trusted)} `, ['base']);
    index.add('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', [null]);
    // Not EVM, though lower-case and sharing the shown digits: never a candidate.
    index.add(`${trusted.slice(0, 6)}${'g'.repeat(32)}${trusted.slice(-4)}`, [null]);
    index.add(`  ${trusted.slice(0, 6)}${'z'.repeat(32)}${trusted.slice(-4).toUpperCase()}`, [null]);
    expect(findLookalike(twin, index.on('base'))).toBe(getAddress(trusted));
    expect(findLookalike(twin, index.on('ethereum'))).toBeNull();
    // Trusted on base only: on ethereum the same address is not trusted, so it is no exception there.
    const other = twinOf(trusted, 'other');
    index.add(other, [null]);
    expect(findLookalike(trusted, index.on('ethereum'))).toBe(getAddress(other));
    expect(findLookalike(trusted, index.on('base'))).toBeNull();
  });

  it('the first match in trust order wins, across the chain and every-chain entries', () => {
    const first = twinOf(trusted, 'first');
    const second = twinOf(trusted, 'second');
    const third = twinOf(trusted, 'third');
    const index = new LookalikeIndex();
    index.add(second, ['ethereum']);
    index.add(first, [null, 'ethereum']);
    index.add(third, [null]);
    expect(index.on('ethereum').withShownDigits(trusted.slice(2, 6) + trusted.slice(-4))).toEqual([
      second,
      first,
      third,
    ]);
    expect(findLookalike(trusted, index.on('ethereum'))).toBe(getAddress(second));
    expect(findLookalike(trusted, index.on('base'))).toBe(getAddress(first));
  });

  it('finds the one look-alike among 200,000 allow entries, as a full pass of the list would', () => {
    const n = 200_000;
    const addresses = Array.from({ length: n }, (_, i) => addressOf(`entry:${i}`));
    const chains = (i: number) => (i % 3 === 0 ? null : i % 3 === 1 ? 'ethereum' : 'base');
    const index = new LookalikeIndex();
    addresses.forEach((a, i) => index.add(a, [chains(i)]));

    const onEthereum = (i: number) => chains(i) === null || chains(i) === 'ethereum';
    const real = addresses[123_457]!; // chain 'ethereum'
    const everyChain = addresses[150_000]!; // chain null
    const baseOnly = addresses[100_001]!; // chain 'base'
    expect([onEthereum(123_457), chains(150_000), chains(100_001)]).toEqual([true, null, 'base']);

    const ethereum = index.on('ethereum');
    expect(findLookalike(twinOf(real, 'poison'), ethereum)).toBe(getAddress(real));
    expect(findLookalike(twinOf(everyChain, 'poison'), ethereum)).toBe(getAddress(everyChain));
    expect(findLookalike(twinOf(baseOnly, 'poison'), ethereum)).toBeNull();
    expect(findLookalike(twinOf(baseOnly, 'poison'), index.on('base'))).toBe(getAddress(baseOnly));
    expect(findLookalike(real, ethereum)).toBeNull();

    // The same answers as the plain list (every entry read) for a sample of targets.
    const trustedOnEthereum = addresses.filter((_, i) => onEthereum(i));
    const targets = [
      ...[0, 1, 2, 123_457, 150_000, 199_999].map((i) => twinOf(addresses[i]!, 'sample')),
      addressOf('stranger'),
      real,
    ];
    for (const target of targets)
      expect(findLookalike(target, ethereum), target).toBe(findLookalike(target, trustedOnEthereum));
  });
});

describe('ListsCache allowed(chain)', () => {
  it('indexes the allow list once per load, in the list order, each address at its first entry', async () => {
    const trusted = addressOf('cache-trusted');
    const [newer, older] = [twinOf(trusted, 'newer'), twinOf(trusted, 'older')];
    // Newest first: `newer` (base) is seen before `older` (every chain); `newer` also applies everywhere.
    const view = await viewOf([
      entry(getAddress(newer), 'base', 1),
      entry(getAddress(older), null, 2),
      entry(getAddress(newer), null, 3),
      { ...entry(getAddress(addressOf('denied')), null, 4), list: 'deny' },
      entry('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v', null, 5),
    ]);
    expect(findLookalike(trusted, view.allowed('ethereum'))).toBe(getAddress(newer));
    expect(findLookalike(trusted, view.allowed('base'))).toBe(getAddress(newer));
    expect(findLookalike(newer, view.allowed('ethereum'))).toBeNull();
    expect(findLookalike(twinOf(addressOf('denied'), 'x'), view.allowed('ethereum'))).toBeNull();
  });

  it('keeps chain-scoped entries to their chain', async () => {
    const trusted = addressOf('scoped');
    const view = await viewOf([entry(getAddress(trusted), 'polygon', 1)]);
    expect(findLookalike(twinOf(trusted, 'x'), view.allowed('polygon'))).toBe(getAddress(trusted));
    expect(findLookalike(twinOf(trusted, 'x'), view.allowed('ethereum'))).toBeNull();
  });
});
