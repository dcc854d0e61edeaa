import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';

/*
 * Webhook signing secrets at rest (README, "Webhooks and the event log"). A secret is stored sealed with
 * AES-256-GCM under the operator's key (`webhooks.secrets_key`, RISKWATCH_SECRETS_KEY), as
 *
 *   rwenc:v1:<kid>:<iv>:<ciphertext and tag>
 *
 * `kid` is the first 8 hex digits of the key's SHA-256, so the key that sealed a value is known without a
 * setting of its own; the IV is 12 random bytes; both binary parts are base64url. The authenticated data
 * names the row the value belongs to (and the version and kid), so a value copied into another row, or
 * altered, does not open. A dump of the database holds no usable secret.
 *
 * A value without the prefix is a plaintext secret from before encryption: it opens as it is, until the
 * worker seals it at start (secret-store.ts). Keys are rotated by configuring the new key, keeping the old
 * one in `webhooks.secrets_previous_keys` (opening only) and running `riskwatch secrets rotate-key`.
 */

const PREFIX = 'rwenc:';
const VERSION = 'v1';
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** The `LIKE` pattern of sealed values, and of values sealed under key `kid`. */
export const sealedPattern = (kid?: string) => (kid ? `${PREFIX}${VERSION}:${kid}:%` : `${PREFIX}%`);

/** The authenticated context of an endpoint's secrets: they open in this row only. */
export const endpointSecretContext = (endpointId: string) => `webhook_endpoints/${endpointId}`;

/**
 * A key as configured: 32 bytes as 64 hex digits (`openssl rand -hex 32`) or base64
 * (`openssl rand -base64 32`). The error never repeats the value.
 */
export function parseSecretsKey(text: string): Buffer {
  const value = text.trim();
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex');
  if (/^[A-Za-z0-9+/]{43}=$/.test(value)) return Buffer.from(value, 'base64');
  throw new Error(
    'expected 32 bytes as 64 hex digits or as base64 (the output of openssl rand -hex 32); the value is not shown',
  );
}

/** The id a key is named by in sealed values and logs: the first 8 hex digits of its SHA-256. */
export const keyIdOf = (key: Buffer) => createHash('sha256').update(key).digest('hex').slice(0, 8);

/** A sealed value that cannot be opened: no key with its id is configured, or it was altered or moved. */
export class SecretOpenError extends Error {
  constructor(
    message: string,
    /** The id of the key the value names. */
    readonly kid: string,
  ) {
    super(message);
    this.name = 'SecretOpenError';
  }
}

/** Seals under the current key; opens under the current key or any previous one. */
export class SecretBox {
  /** The id of the key new values are sealed under; undefined when no key is configured. */
  readonly kid: string | undefined;
  private readonly keys = new Map<string, Buffer>();

  constructor(current: Buffer | undefined, previous: readonly Buffer[] = []) {
    for (const key of [...previous, ...(current ? [current] : [])]) this.keys.set(keyIdOf(key), key);
    this.kid = current ? keyIdOf(current) : undefined;
  }

  /** The box of `webhooks.secrets_key` and `webhooks.secrets_previous_keys` (validated by the settings). */
  static fromSettings(s: { secrets_key: string; secrets_previous_keys: readonly string[] }): SecretBox {
    return new SecretBox(
      s.secrets_key ? parseSecretsKey(s.secrets_key) : undefined,
      s.secrets_previous_keys.map(parseSecretsKey),
    );
  }

  /** The ids of every configured key, the current one's included. */
  get kids(): string[] {
    return [...this.keys.keys()];
  }

  static isSealed(stored: string): boolean {
    return stored.startsWith(PREFIX);
  }

  /** The id of the key a sealed value names (undefined for plaintext). */
  static kidOf(stored: string): string | undefined {
    return SecretBox.isSealed(stored) ? stored.split(':')[2] : undefined;
  }

  /** Whether `stored` is sealed under the current key (plaintext and older keys are not). */
  isCurrent(stored: string): boolean {
    return this.kid !== undefined && SecretBox.kidOf(stored) === this.kid;
  }

  /** `plaintext` sealed under the current key, bound to `context`. Throws when no key is configured. */
  seal(plaintext: string, context: string): string {
    const kid = this.kid;
    if (kid === undefined) throw new Error('no secrets key is configured (webhooks.secrets_key)');
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.keys.get(kid)!, iv, { authTagLength: TAG_BYTES });
    cipher.setAAD(aad(kid, context));
    const sealed = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${PREFIX}${VERSION}:${kid}:${iv.toString('base64url')}:${sealed.toString('base64url')}`;
  }

  /**
   * The secret `stored` holds: opened with the key it names, or as it is when it is plaintext. Throws a
   * SecretOpenError when that key is not configured, or the value does not open in `context`.
   */
  open(stored: string, context: string): string {
    if (!SecretBox.isSealed(stored)) return stored;
    const [, version, kid = '', iv = '', sealed = ''] = stored.split(':');
    const key = this.keys.get(kid);
    if (!key)
      throw new SecretOpenError(
        this.keys.size === 0
          ? `a webhook secret is sealed under key ${kid}, and no secrets key is configured (RISKWATCH_SECRETS_KEY)`
          : `a webhook secret is sealed under key ${kid}, which is neither RISKWATCH_SECRETS_KEY nor one of ` +
              'RISKWATCH_SECRETS_PREVIOUS_KEYS',
        kid,
      );
    const bytes = Buffer.from(sealed, 'base64url');
    try {
      if (version !== VERSION || bytes.length < TAG_BYTES) throw new Error('malformed');
      const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64url'), {
        authTagLength: TAG_BYTES,
      });
      decipher.setAAD(aad(kid, context));
      decipher.setAuthTag(bytes.subarray(bytes.length - TAG_BYTES));
      return Buffer.concat([
        decipher.update(bytes.subarray(0, bytes.length - TAG_BYTES)),
        decipher.final(),
      ]).toString('utf8');
    } catch {
      throw new SecretOpenError(
        `a webhook secret sealed under key ${kid} does not open: it was altered, or copied from another row`,
        kid,
      );
    }
  }
}

const aad = (kid: string, context: string) => Buffer.from(`${VERSION}:${kid}:${context}`, 'utf8');
