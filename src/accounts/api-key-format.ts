import { hash, randomInt, timingSafeEqual } from 'node:crypto';
import { crc32 } from 'node:zlib';

/**
 * API key format: `rwk_` + 32 random base62 characters + 6 base62 characters of the CRC32 of those 32.
 * Secret scanners can recognise the prefix; the checksum rejects typos and garbage before any lookup.
 * Only the SHA-256 of the whole key and its first 8 characters (`rwk_` + 4) are ever stored.
 */
const ALPHABET = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
const PREFIX = 'rwk_';
const RANDOM_LENGTH = 32;
const CHECKSUM_LENGTH = 6;
const KEY_PATTERN = /^rwk_[0-9A-Za-z]{38}$/;

function base62(value: number, width: number): string {
  let out = '';
  let rest = value;
  for (let i = 0; i < width; i++) {
    out = ALPHABET[rest % 62]! + out;
    rest = Math.floor(rest / 62);
  }
  return out;
}

const checksum = (random: string) => base62(crc32(random), CHECKSUM_LENGTH);

export function generateApiKey(): string {
  let random = '';
  for (let i = 0; i < RANDOM_LENGTH; i++) random += ALPHABET[randomInt(62)];
  return PREFIX + random + checksum(random);
}

/** True when the key has the right shape and its checksum matches (compared in constant time). */
export function isWellFormedApiKey(key: string): boolean {
  if (!KEY_PATTERN.test(key)) return false;
  const random = key.slice(PREFIX.length, PREFIX.length + RANDOM_LENGTH);
  const expected = Buffer.from(checksum(random));
  const given = Buffer.from(key.slice(PREFIX.length + RANDOM_LENGTH));
  return timingSafeEqual(expected, given);
}

/** SHA-256, hex: what the database keeps of a key. One-shot `hash` (no Hash object per request). */
export const hashApiKey = (key: string) => hash('sha256', key, 'hex');
export const displayPrefix = (key: string) => key.slice(0, 8);
