import { describe, expect, it } from 'vitest';
import {
  displayPrefix,
  generateApiKey,
  hashApiKey,
  isWellFormedApiKey,
} from '../../src/accounts/api-key-format.js';

const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';

describe('API key format', () => {
  const key = generateApiKey();

  it('is rwk_ + 38 base62 characters and passes its own checksum', () => {
    expect(key).toMatch(/^rwk_[0-9A-Za-z]{38}$/);
    expect(isWellFormedApiKey(key)).toBe(true);
  });

  it('fails the check after any single-character change (CRC32 catches every one)', () => {
    let typos = 0;
    for (let i = 0; i < key.length; i++) {
      for (const replacement of `${BASE62}_`) {
        if (replacement === key[i]) continue;
        const typo = key.slice(0, i) + replacement + key.slice(i + 1);
        if (isWellFormedApiKey(typo)) expect.fail(`${typo} (position ${i}) passed the check`);
        typos++;
      }
    }
    expect(typos).toBe(key.length * 62);
  });

  it('refuses the wrong shape: length, prefix, alphabet, surrounding text', () => {
    for (const bad of [
      '',
      key.slice(0, -1),
      `${key}0`,
      key.replace('rwk_', 'rwx_'),
      key.replace('rwk_', 'RWK_'),
      `${key.slice(0, 10)}-${key.slice(11)}`,
      ` ${key}`,
      `${key}\n`,
      `Bearer ${key}`,
    ])
      expect(isWellFormedApiKey(bad), JSON.stringify(bad)).toBe(false);
  });

  it('hashes with SHA-256 to 64 lowercase hex characters, deterministically and per key', () => {
    const hash = hashApiKey(key);
    expect(hash).toMatch(/^[0-9a-f]{64}$/);
    expect(hashApiKey(key)).toBe(hash);
    expect(hashApiKey(generateApiKey())).not.toBe(hash);
    // Known SHA-256 vector: the hash is of the key text itself, unsalted, so lookups are exact.
    expect(hashApiKey('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('displays the first 8 characters only (rwk_ + 4)', () => {
    const prefix = displayPrefix(key);
    expect(prefix).toHaveLength(8);
    expect(prefix).toBe(key.slice(0, 8));
    expect(prefix.startsWith('rwk_')).toBe(true);
  });

  it('generates distinct, well-formed keys', () => {
    const keys = Array.from({ length: 1000 }, generateApiKey);
    expect(new Set(keys).size).toBe(1000);
    expect(keys.every(isWellFormedApiKey)).toBe(true);
    expect(new Set(keys.map(hashApiKey)).size).toBe(1000);
  });
});
