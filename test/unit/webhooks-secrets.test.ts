import { createHash, randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { ConfigError } from '../../src/platform/config.js';
import {
  endpointSecretContext,
  keyIdOf,
  parseSecretsKey,
  SecretBox,
  SecretOpenError,
} from '../../src/webhooks/secrets.js';

/* The box the webhook signing secrets are stored in (src/webhooks/secrets.ts), and its settings. */

const SECRET = `whsec_${randomBytes(24).toString('base64')}`;
const HERE = endpointSecretContext('we_0001');
const key = () => randomBytes(32);

/** The SecretOpenError `fn` throws. */
function openError(fn: () => unknown): SecretOpenError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(SecretOpenError);
    return err as SecretOpenError;
  }
  throw new Error('expected a SecretOpenError, but nothing was thrown');
}

describe('SecretBox', () => {
  it('seals as rwenc:v1:<kid>:<iv>:<ciphertext>, never the same twice, and opens it again', () => {
    const k = key();
    const box = new SecretBox(k);
    const kid = createHash('sha256').update(k).digest('hex').slice(0, 8);
    expect(box.kid).toBe(kid);
    expect(keyIdOf(k)).toBe(kid);
    const sealed = box.seal(SECRET, HERE);
    expect(sealed).toMatch(new RegExp(`^rwenc:v1:${kid}:[A-Za-z0-9_-]{16}:[A-Za-z0-9_-]+$`));
    expect(sealed.length).toBeLessThanOrEqual(255); // the column
    expect(sealed).not.toContain(SECRET.slice('whsec_'.length, 20));
    expect(box.seal(SECRET, HERE)).not.toBe(sealed); // a random IV each time
    expect(box.open(sealed, HERE)).toBe(SECRET);
    expect(SecretBox.isSealed(sealed)).toBe(true);
    expect(SecretBox.kidOf(sealed)).toBe(kid);
    expect(box.isCurrent(sealed)).toBe(true);
  });

  it('opens plaintext (stored before encryption) as it is', () => {
    const box = new SecretBox(key());
    expect(box.open(SECRET, HERE)).toBe(SECRET);
    expect(SecretBox.isSealed(SECRET)).toBe(false);
    expect(SecretBox.kidOf(SECRET)).toBeUndefined();
    expect(box.isCurrent(SECRET)).toBe(false);
    expect(new SecretBox(undefined).open(SECRET, HERE)).toBe(SECRET);
  });

  it('refuses a value that was altered, or copied into another row', () => {
    const box = new SecretBox(key());
    const sealed = box.seal(SECRET, HERE);
    const parts = sealed.split(':');
    const body = Buffer.from(parts[4]!, 'base64url');
    body[0]! ^= 1;
    const tampered = [...parts.slice(0, 4), body.toString('base64url')].join(':');
    expect(openError(() => box.open(tampered, HERE)).message).toMatch(/altered, or copied from another row/);
    const tag = Buffer.from(parts[4]!, 'base64url');
    tag[tag.length - 1]! ^= 1;
    openError(() => box.open([...parts.slice(0, 4), tag.toString('base64url')].join(':'), HERE));
    openError(() =>
      box.open([...parts.slice(0, 3), randomBytes(12).toString('base64url'), parts[4]].join(':'), HERE),
    );
    openError(() => box.open(`${sealed.slice(0, 30)}`, HERE)); // truncated
    // The same value in another endpoint's row: wrong authenticated data.
    const err = openError(() => box.open(sealed, endpointSecretContext('we_0002')));
    expect(err.kid).toBe(box.kid);
  });

  it('opens with a previous key, seals with the current one only, and names a key it does not have', () => {
    const [oldKey, newKey, otherKey] = [key(), key(), key()];
    const sealedOld = new SecretBox(oldKey).seal(SECRET, HERE);
    const rotated = new SecretBox(newKey, [oldKey]);
    expect(rotated.kid).toBe(keyIdOf(newKey));
    expect(rotated.kids.sort()).toEqual([keyIdOf(oldKey), keyIdOf(newKey)].sort());
    expect(rotated.open(sealedOld, HERE)).toBe(SECRET);
    expect(rotated.isCurrent(sealedOld)).toBe(false);
    expect(SecretBox.kidOf(rotated.seal(SECRET, HERE))).toBe(keyIdOf(newKey));

    const unknown = openError(() => new SecretBox(otherKey).open(sealedOld, HERE));
    expect(unknown.kid).toBe(keyIdOf(oldKey));
    expect(unknown.message).toContain(keyIdOf(oldKey));
    expect(unknown.message).toMatch(/RISKWATCH_SECRETS_PREVIOUS_KEYS/);
    const none = openError(() => new SecretBox(undefined).open(sealedOld, HERE));
    expect(none.message).toMatch(/no secrets key is configured/);
    // A previous key opens, never seals.
    expect(() => new SecretBox(undefined, [oldKey]).seal(SECRET, HERE)).toThrow(/no secrets key/);
    expect(new SecretBox(undefined, [oldKey]).open(sealedOld, HERE)).toBe(SECRET);
  });

  it('takes a key as 64 hex digits or as base64 of 32 bytes, and nothing else', () => {
    const k = key();
    expect(parseSecretsKey(k.toString('hex'))).toEqual(k);
    expect(parseSecretsKey(k.toString('hex').toUpperCase())).toEqual(k);
    expect(parseSecretsKey(k.toString('base64'))).toEqual(k);
    for (const bad of [
      '',
      'ab'.repeat(31),
      'ab'.repeat(33),
      randomBytes(24).toString('base64'),
      'zz'.repeat(32),
    ])
      expect(() => parseSecretsKey(bad)).toThrow(/32 bytes/);
  });
});

describe('webhooks.secrets_key settings', () => {
  it('defaults to no key and no previous keys', () => {
    expect(loadConfig({}).webhooks).toMatchObject({ secrets_key: '', secrets_previous_keys: [] });
    const k = key().toString('hex');
    const previous = [key().toString('base64'), key().toString('hex')];
    expect(
      loadConfig({ RISKWATCH_SECRETS_KEY: k, RISKWATCH_SECRETS_PREVIOUS_KEYS: previous.join(', ') }).webhooks,
    ).toMatchObject({ secrets_key: k, secrets_previous_keys: previous });
  });

  it('refuses a bad key in one line naming the variable, never showing the value', () => {
    const bad = 'not-a-key-but-a-password-someone-typed';
    const short = 'ab'.repeat(20);
    try {
      loadConfig({
        RISKWATCH_SECRETS_KEY: bad,
        RISKWATCH_SECRETS_PREVIOUS_KEYS: `${key().toString('hex')},${short}`,
      });
      expect.unreachable('a ConfigError');
    } catch (err) {
      expect(err).toBeInstanceOf(ConfigError);
      const { lines } = err as ConfigError;
      expect(lines).toEqual([
        expect.stringMatching(/^config: RISKWATCH_SECRETS_KEY \(webhooks\.secrets_key\): expected 32 bytes/),
        expect.stringMatching(
          /^config: RISKWATCH_SECRETS_PREVIOUS_KEYS \(webhooks\.secrets_previous_keys\.1\): expected 32 bytes/,
        ),
      ]);
      for (const line of lines) {
        expect(line).not.toContain(bad);
        expect(line).not.toContain(short);
      }
    }
  });
});
