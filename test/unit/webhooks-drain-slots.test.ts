import { describe, expect, it } from 'vitest';
import { DrainSlots } from '../../src/webhooks/drain-slots.js';

/* Which webhook drains of a worker may start (src/webhooks/drain-slots.ts): fair between accounts. */

const takeAll = (slots: DrainSlots, account: string, tries: number) =>
  Array.from({ length: tries }, () => slots.take(account)).filter(Boolean).length;

describe('drain slots', () => {
  it('one account holds at most three quarters of the slots; another account still finds one', () => {
    const slots = new DrainSlots(16);
    expect(takeAll(slots, 'acc_a', 50)).toBe(12);
    expect(slots.take('acc_b')).toBe(true); // its first drain
    expect(slots.take('acc_b')).toBe(false); // a second one only while more than 4 stay free
    expect(takeAll(slots, 'acc_c', 5)).toBe(1);
    expect(takeAll(slots, 'acc_d', 5)).toBe(1);
    expect(takeAll(slots, 'acc_e', 5)).toBe(1);
    // Full now: starving an account took four others besides the greedy one.
    expect(slots.take('acc_f')).toBe(false);
    slots.release('acc_a');
    expect(slots.take('acc_f')).toBe(true);
  });

  it('gives a slot back on release, and a worker of one slot runs any account', () => {
    const slots = new DrainSlots(4); // a reserve of one
    expect(takeAll(slots, 'acc_a', 10)).toBe(3);
    slots.release('acc_a');
    slots.release('acc_a');
    expect(takeAll(slots, 'acc_a', 10)).toBe(2);
    const single = new DrainSlots(1);
    expect(single.take('acc_a')).toBe(true);
    expect(single.take('acc_b')).toBe(false);
    single.release('acc_a');
    expect(single.take('acc_b')).toBe(true);
  });
});
