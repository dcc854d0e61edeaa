import { getBase58Decoder, isAddress } from '@solana/kit';
import { randomBytes, randomInt } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import {
  inferChainFromAddress,
  parseAddress,
  parseEvmAddress,
  parseSolanaAddress,
} from '../../src/chains/addresses.js';
import { AppError } from '../../src/platform/errors.js';

function appError(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return err as AppError;
  }
  throw new Error('expected an AppError, but nothing was thrown');
}

const USDC = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
const SYSTEM_PROGRAM = '11111111111111111111111111111111';
/** The EIP-55 specification's own examples. */
const CHECKSUMMED = [
  '0x5aAeb6053F3E94C9b9A09f33669435E7Ef1BeAed',
  '0xfB6916095ca1df60bB79Ce92cE3Ea74c37c5d359',
  '0xdbF03B407c01E7cD3CBea99509d93f8DDDC8C6FB',
  '0xD1220A0cf47c7B9Be7A2E6BA89F429762e7b9aDb',
] as const;

describe('parseSolanaAddress', () => {
  it.each([USDC, SYSTEM_PROGRAM, 'So11111111111111111111111111111111111111112'])('accepts %s', (a) => {
    expect(parseSolanaAddress(a)).toBe(a);
  });

  it('trims surrounding blanks', () => {
    expect(parseSolanaAddress(`  ${USDC}\n`)).toBe(USDC);
  });

  it.each([
    ['too short (31 bytes)', '1111111111111111111111111111111'],
    ['too long (33 bytes)', `${USDC}1`],
    ['not base58 (0, O, I, l)', 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1O'],
    ['empty', ''],
    ['an EVM address', CHECKSUMMED[0]],
  ])('refuses %s with invalid_address naming the field', (_what, input) => {
    const err = appError(() => parseSolanaAddress(input, 'mint'));
    expect(err.code).toBe('invalid_address');
    expect(err.extra.errors).toEqual([{ path: 'mint', message: expect.any(String) as string }]);
  });

  it('accepts exactly what @solana/kit accepts: encodings of 31, 32 and 33 bytes, leading zeros, noise', () => {
    const base58 = getBase58Decoder();
    const alphabet = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz0OIl+/';
    const cases: string[] = [];
    for (let i = 0; i < 3000; i++) {
      const bytes = randomBytes(31 + (i % 3));
      bytes.fill(0, 0, randomInt(0, 4) === 0 ? randomInt(0, 6) : 0);
      const encoded = base58.decode(bytes);
      cases.push(encoded);
      const at = randomInt(0, encoded.length);
      cases.push(encoded.slice(0, at) + alphabet[randomInt(0, alphabet.length)]! + encoded.slice(at + 1));
      cases.push(Array.from({ length: randomInt(30, 47) }, () => alphabet[randomInt(0, 58)]).join(''));
    }
    let accepted = 0;
    for (const c of cases) {
      const kit = isAddress(c);
      let ours = true;
      try {
        parseSolanaAddress(c);
      } catch {
        ours = false;
      }
      expect(ours, c).toBe(kit);
      if (kit) accepted++;
    }
    expect(accepted).toBeGreaterThan(2000); // the random 32-byte keys at least
  });
});

describe('parseEvmAddress', () => {
  it.each(CHECKSUMMED)('accepts the checksummed %s as is', (a) => {
    expect(parseEvmAddress(a)).toBe(a);
  });

  it('accepts all-lower-case and all-upper-case (unchecksummed) and returns EIP-55 form', () => {
    expect(parseEvmAddress(CHECKSUMMED[0].toLowerCase())).toBe(CHECKSUMMED[0]);
    expect(parseEvmAddress(`0x${CHECKSUMMED[1].slice(2).toUpperCase()}`)).toBe(CHECKSUMMED[1]);
  });

  it('refuses a mixed-case address whose checksum is wrong (a typo signal)', () => {
    const typo = `0x5aaeb6053F3E94C9b9A09f33669435E7Ef1BeAed`; // one letter's case flipped
    const err = appError(() => parseEvmAddress(typo));
    expect(err.code).toBe('invalid_address');
    expect(err.message).toMatch(/EIP-55 checksum/);
    expect(err.extra.errors).toEqual([{ path: 'target', message: 'EIP-55 checksum mismatch' }]);
  });

  it.each([
    ['no 0x', CHECKSUMMED[0].slice(2)],
    ['upper-case 0X', `0X${CHECKSUMMED[0].slice(2)}`],
    ['39 digits', CHECKSUMMED[0].slice(0, -1)],
    ['41 digits', `${CHECKSUMMED[0]}0`],
    ['not hex', `0x${'g'.repeat(40)}`],
    ['a Solana address', USDC],
  ])('refuses %s', (_what, input) => {
    expect(appError(() => parseEvmAddress(input)).code).toBe('invalid_address');
  });
});

describe('parseAddress and inferChainFromAddress', () => {
  it('parses by the network family', () => {
    expect(parseAddress({ family: 'solana' }, USDC)).toBe(USDC);
    expect(parseAddress({ family: 'evm' }, CHECKSUMMED[2].toLowerCase())).toBe(CHECKSUMMED[2]);
    expect(appError(() => parseAddress({ family: 'evm' }, USDC)).code).toBe('invalid_address');
  });

  it('infers solana/mainnet from base58 and ethereum/mainnet from 0x', () => {
    const sol = inferChainFromAddress(USDC);
    expect([sol.network.chain, sol.network.network, sol.address]).toEqual(['solana', 'mainnet', USDC]);
    const eth = inferChainFromAddress(CHECKSUMMED[3].toLowerCase());
    expect([eth.network.chain, eth.network.network, eth.address]).toEqual([
      'ethereum',
      'mainnet',
      CHECKSUMMED[3],
    ]);
  });

  it('refuses what is neither, and a 0x address with a bad checksum', () => {
    expect(appError(() => inferChainFromAddress('hello world')).code).toBe('invalid_address');
    expect(appError(() => inferChainFromAddress('0x5aaeb6053F3E94C9b9A09f33669435E7Ef1BeAed')).code).toBe(
      'invalid_address',
    );
  });
});
