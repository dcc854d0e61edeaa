import { describe, expect, it } from 'vitest';
import { BPF_LOADER_UPGRADEABLE, classifySolanaAccount } from '../../src/risk/solana/kind.js';
import { PROTOTYPE_NAMES } from '../support/prototype-keys.js';

describe('Solana classification of an owner named like an Object.prototype key', () => {
  const account = (owner: string) => ({
    owner,
    lamports: 1n,
    executable: false,
    data: new Uint8Array(8),
    space: 8,
  });

  it('is an account of another program, not a loader account (the owner is the node’s answer)', () => {
    for (const owner of PROTOTYPE_NAMES) {
      const c = classifySolanaAccount(account(owner));
      expect(c, owner).toEqual({ kind: 'account', class: 'other', ownerProgram: owner });
    }
  });

  it('still knows the real loaders', () => {
    expect(classifySolanaAccount(account(BPF_LOADER_UPGRADEABLE))).toMatchObject({
      class: 'loader_account',
      loader: 'bpf-upgradeable',
    });
  });
});
