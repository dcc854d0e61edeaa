import { describe, expect, it } from 'vitest';
import { newId } from '../../src/platform/ids.js';

describe('newId', () => {
  it('is the prefix, 12 hex digits of milliseconds and 16 random hex digits', () => {
    expect(newId('req', 0x1234)).toMatch(/^req_000000001234[0-9a-f]{16}$/);
    expect(newId('acc')).toMatch(/^acc_[0-9a-f]{28}$/);
  });

  it('never repeats, across many refills of the random pool', () => {
    const ids = Array.from({ length: 5000 }, () => newId('use', 1));
    expect(new Set(ids).size).toBe(ids.length);
    expect(new Set(ids.map((id) => id.slice(-16))).size).toBe(ids.length);
  });

  it('sorts by creation time', () => {
    const earlier = newId('key', 1_700_000_000_000);
    const later = newId('key', 1_700_000_000_001);
    expect(earlier < later).toBe(true);
  });
});
