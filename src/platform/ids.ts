import { randomFillSync } from 'node:crypto';

/**
 * Random bytes for ids, drawn from the CSPRNG a pool at a time: one `randomFillSync` per 512 ids instead
 * of a `randomBytes` call (an OpenSSL round trip, a getpid syscall) per request id. Every byte is used
 * once, so ids are exactly as random as before.
 */
const POOL_BYTES = 4096;
const pool = Buffer.allocUnsafe(POOL_BYTES);
let offset = POOL_BYTES;

function randomHex8(): string {
  if (offset + 8 > POOL_BYTES) {
    randomFillSync(pool);
    offset = 0;
  }
  const hex = pool.toString('hex', offset, offset + 8);
  offset += 8;
  return hex;
}

/**
 * Prefixed, time-ordered ids (`acc_…`, `key_…`, `use_…`): 12 hex digits of milliseconds then 16 random hex
 * digits, so ids sort by creation time and a cursor on (time, id) is stable.
 */
export function newId(prefix: string, at: number = Date.now()): string {
  return `${prefix}_${at.toString(16).padStart(12, '0')}${randomHex8()}`;
}

/** When an id of `newId` was made (ms since the epoch); null for a string that is not such an id. */
export function idTime(id: string): number | null {
  const m = /^[a-z]+_([0-9a-f]{12})[0-9a-f]{16}$/.exec(id);
  return m ? parseInt(m[1]!, 16) : null;
}
