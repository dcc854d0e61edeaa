import { describe, expect, it } from 'vitest';
import type { KnownOwnerKind, OwnerLabel } from '../../src/risk/known/solana.js';
import { holderConcentration, type LargestAccount } from '../../src/risk/solana/token/holders.js';

/*
 * Holder concentration as a pure function: the largest token accounts (with what the reads learnt of their
 * owners) in, the `holders` view and the `holder_concentration` finding out. No chain, no provider.
 */

const SLOT = 4242;
const SYSTEM = '11111111111111111111111111111111';
let nextAccount = 0;

/** A token account of `owner` holding `amount` raw units; a label makes it a known owner. */
function account(
  owner: string | null,
  amount: bigint,
  label?: { kind: KnownOwnerKind; label?: string; matchedBy?: OwnerLabel['matchedBy'] },
): LargestAccount {
  nextAccount += 1;
  return {
    tokenAccount: `TokenAccount${nextAccount}`,
    amount,
    owner,
    ownerProgram: owner ? SYSTEM : null,
    label: label
      ? {
          label: label.label ?? `${label.kind} ${owner}`,
          kind: label.kind,
          matchedBy: label.matchedBy ?? 'address',
        }
      : null,
  };
}

/** `n` owners holding `each` apiece, one token account each. */
const owners = (n: number, each: bigint, prefix = 'Owner'): LargestAccount[] =>
  Array.from({ length: n }, (_, i) => account(`${prefix}${i}`, each));

describe('holderConcentration: shares', () => {
  it('top10_share adds up the 10 largest owners only, as a fraction of the whole supply', () => {
    // 12 owners of 5% each: the top 10 hold 50%, the other two are not counted.
    const { view } = holderConcentration({ supply: 1_000n, accounts: owners(12, 50n), slot: SLOT });
    expect(view.top10_share).toBe(0.5);
    expect(view.excluded_share).toBe(0);
    expect(view.largest).toHaveLength(12);
    expect(view.largest.every((h) => h.share === 0.05)).toBe(true);
  });

  it('groups token accounts by owner: one owner with three accounts is one holder', () => {
    const accounts = [
      account('Whale', 200n),
      account('Small', 100n),
      account('Whale', 150n),
      account('Whale', 50n),
    ];
    const { view } = holderConcentration({ supply: 1_000n, accounts, slot: SLOT });
    expect(view.top_owner).toEqual({ owner: 'Whale', share: 0.4, accounts: 3 });
    expect(view.top10_share).toBe(0.5);
    // The view keeps every token account, in the order the node ranked them.
    expect(view.largest.map((h) => [h.owner, h.amount_raw])).toEqual([
      ['Whale', '200'],
      ['Small', '100'],
      ['Whale', '150'],
      ['Whale', '50'],
    ]);
  });

  it('ranks owners by amount, ties by owner address, so the top owner is deterministic', () => {
    const { view } = holderConcentration({
      supply: 1_000n,
      accounts: [account('Bravo', 100n), account('Alpha', 100n)],
      slot: SLOT,
    });
    expect(view.top_owner?.owner).toBe('Alpha');
  });

  it('rounds shares down to six decimals', () => {
    const { view } = holderConcentration({ supply: 3n, accounts: [account('One', 1n)], slot: SLOT });
    expect(view.largest[0]?.share).toBe(0.333333);
    expect(view.top10_share).toBe(0.333333);
  });

  it('an account whose owner is unknown stands alone, and a top owner among them has owner null', () => {
    const accounts = [account(null, 300n), account(null, 200n), account('Known', 100n)];
    const { view } = holderConcentration({ supply: 1_000n, accounts, slot: SLOT });
    expect(view.top_owner).toEqual({ owner: null, share: 0.3, accounts: 1 });
    expect(view.top10_share).toBe(0.6);
    expect(view.largest[0]).toMatchObject({ owner: null, owner_program: null, label: null, excluded: false });
  });
});

describe('holderConcentration: known owners', () => {
  it('leaves pools, lockers and burn addresses out of the shares, and reports them in excluded_share', () => {
    const accounts = [
      account('RaydiumAuthority', 500n, {
        kind: 'pool',
        label: 'Raydium AMM v4',
        matchedBy: 'owner_program',
      }),
      account('Locker', 200n, { kind: 'locker' }),
      account('Incinerator', 100n, { kind: 'burn' }),
      account('Holder', 100n),
      account('Other', 100n),
    ];
    const { view, finding } = holderConcentration({ supply: 1_000n, accounts, slot: SLOT });
    expect(view.excluded_share).toBe(0.8);
    expect(view.top10_share).toBe(0.2);
    expect(view.top_owner).toEqual({ owner: 'Holder', share: 0.1, accounts: 1 });
    expect(view.largest[0]).toMatchObject({
      label: 'Raydium AMM v4',
      label_kind: 'pool',
      excluded: true,
      owner_program: SYSTEM,
    });
    // 80% in a pool, a locker and the incinerator is not concentration among holders.
    expect(finding).toBeUndefined();
  });

  it('counts an exchange as a holder (labelled, not excluded)', () => {
    const accounts = [
      account('Exchange', 900n, { kind: 'exchange', label: 'Some exchange' }),
      account('Me', 100n),
    ];
    const { view, finding } = holderConcentration({ supply: 1_000n, accounts, slot: SLOT });
    expect(view.largest[0]).toMatchObject({
      label: 'Some exchange',
      label_kind: 'exchange',
      excluded: false,
    });
    expect(view.excluded_share).toBe(0);
    expect(view.top_owner).toEqual({ owner: 'Exchange', share: 0.9, accounts: 1 });
    expect(finding?.severity).toBe('high');
  });

  it('notes the excluded share in the finding when it is not zero', () => {
    const accounts = [account('Pool', 100n, { kind: 'pool' }), ...owners(3, 300n)];
    const { finding } = holderConcentration({ supply: 1_000n, accounts, slot: SLOT });
    expect(finding?.detail).toContain('(known pools, lockers and burn addresses, 10.0%, left out)');
  });

  it('only excluded owners among the largest: no top owner, shares 0, no finding', () => {
    const accounts = [account('Pool', 600n, { kind: 'pool' }), account('Burn', 400n, { kind: 'burn' })];
    const { view, finding } = holderConcentration({ supply: 1_000n, accounts, slot: SLOT });
    expect(view).toMatchObject({ top10_share: 0, top_owner: null, excluded_share: 1 });
    expect(finding).toBeUndefined();
  });
});

describe('holderConcentration: zero supply and no accounts', () => {
  it('zero supply: shares unknown (null) in the summary, 0 per account, no finding', () => {
    const { view, finding } = holderConcentration({
      supply: 0n,
      accounts: [account('Holder', 0n), account('Pool', 0n, { kind: 'pool' })],
      slot: SLOT,
    });
    expect(view.top10_share).toBeNull();
    expect(view.excluded_share).toBeNull();
    expect(view.top_owner).toEqual({ owner: 'Holder', share: 0, accounts: 1 });
    expect(view.largest.map((h) => h.share)).toEqual([0, 0]);
    expect(finding).toBeUndefined();
  });

  it('no token accounts at all: no top owner, no finding', () => {
    const { view, finding } = holderConcentration({ supply: 1_000n, accounts: [], slot: SLOT });
    expect(view).toEqual({ top10_share: 0, top_owner: null, excluded_share: 0, largest: [] });
    expect(finding).toBeUndefined();
  });
});

describe('holderConcentration: the finding', () => {
  it('top 10 over 50%: medium', () => {
    const { finding } = holderConcentration({ supply: 1_000n, accounts: owners(10, 51n), slot: SLOT });
    expect(finding).toMatchObject({ code: 'holder_concentration', severity: 'medium' });
    expect(finding?.detail).toBe(
      'The 10 largest holders hold 51.0% of the supply; from the 10 largest token accounts.',
    );
  });

  it('exactly 50% is not over the threshold: no finding', () => {
    const { finding } = holderConcentration({ supply: 1_000n, accounts: owners(10, 50n), slot: SLOT });
    expect(finding).toBeUndefined();
  });

  it('top 10 over 80%: high', () => {
    const { finding } = holderConcentration({ supply: 1_000n, accounts: owners(10, 81n), slot: SLOT });
    expect(finding?.severity).toBe('high');
  });

  it('one owner over 40% (across accounts): high, naming the owner and its account count', () => {
    const accounts = [account('Whale', 250n), account('Whale', 160n), ...owners(3, 10n)];
    const { finding } = holderConcentration({ supply: 1_000n, accounts, slot: SLOT });
    expect(finding?.severity).toBe('high');
    expect(finding?.detail).toBe(
      'The 4 largest holders hold 44.0% of the supply; one owner, Whale, holds 41.0% across 2 token accounts; from the 5 largest token accounts.',
    );
  });

  it('a single unreadable account over 40% is named "unknown"', () => {
    const { finding } = holderConcentration({ supply: 1_000n, accounts: [account(null, 500n)], slot: SLOT });
    expect(finding?.detail).toContain('one owner, unknown, holds 50.0%');
  });

  it('carries the getTokenLargestAccounts slot and the numbers as evidence', () => {
    const accounts = [account('Whale', 700n), account('Pool', 100n, { kind: 'pool' })];
    const { view, finding } = holderConcentration({ supply: 1_000n, accounts, slot: SLOT });
    expect(finding?.evidence).toEqual({
      method: 'getTokenLargestAccounts',
      slot: SLOT,
      value: {
        supply_raw: '1000',
        top10_share: 0.7,
        top_owner: { owner: 'Whale', share: 0.7, accounts: 1 },
        excluded_share: 0.1,
        accounts_considered: 2,
        owners_read_with: 'getMultipleAccounts',
      },
    });
    expect(finding?.evidence.value).toMatchObject({ top_owner: view.top_owner });
  });
});
