/*
 * The doctor's output is pasted into tickets and chat: it never carries a secret. URLs are shown with their
 * password masked, node provider URLs (which often carry an API key in their path) not at all, and every
 * detail passes through `redact`, which replaces any known secret value wherever it appears (an error
 * message quoting a connection string included).
 */

const MASK = '***';

/** `postgres://riskwatch:***@postgres:5432/riskwatch`: the URL with its password (if any) masked. */
export function maskUrl(url: string): string {
  if (!URL.canParse(url)) return '(not a URL)';
  const parsed = new URL(url);
  if (parsed.password) parsed.password = MASK;
  // A query may hold a token (`?apikey=`): shown as its keys only.
  for (const key of [...parsed.searchParams.keys()]) parsed.searchParams.set(key, MASK);
  return parsed.toString().replaceAll(encodeURIComponent(MASK), MASK);
}

/** Environment variables that hold a URL with a password (masked) or a key (in the query). */
const URL_ENV = /^(DATABASE_URL|REDIS_URL|JWT_JWKS_URL)$/;
/** Environment variables whose values are secret whole: keys, and node provider URLs (API keys in paths). */
const SECRET_ENV = /^(AGENT_KEYS|JWT_SECRET|RISKWATCH_SECRETS_KEY|RISKWATCH_SECRETS_PREVIOUS_KEYS)$/;
/** `RISKWATCH_RPC_<CHAIN>_<NETWORK>` beside the RPC tuning variables (`RISKWATCH_RPC_TIMEOUT_MS`). */
const RPC_ENV = /^RISKWATCH_RPC_/;

/** Shorter values are not searched for (they would mask ordinary words). */
const MIN_SECRET_LENGTH = 6;

export class Redactor {
  private readonly secrets = new Set<string>();

  /** Remembers `value` (each item of a comma-separated list) as secret, wherever it appears. */
  add(value: string | undefined): void {
    for (const part of value?.split(',') ?? []) this.remember(part.trim());
  }

  /** Remembers the password and the query values of `url` (shown masked by maskUrl) as secret. */
  addUrl(url: string | undefined): void {
    if (!url || !URL.canParse(url)) return this.add(url);
    const parsed = new URL(url);
    for (const piece of [
      parsed.password,
      decodeURIComponent(parsed.password),
      ...parsed.searchParams.values(),
    ])
      this.remember(piece);
  }

  /** Every secret of the environment (before the configuration is known, or when it does not load). */
  addEnvironment(env: NodeJS.ProcessEnv): void {
    for (const [name, value] of Object.entries(env)) {
      if (URL_ENV.test(name)) this.addUrl(value);
      else if (SECRET_ENV.test(name)) this.add(value);
      else if (RPC_ENV.test(name))
        for (const url of value?.split(',') ?? []) if (URL.canParse(url.trim())) this.add(url);
    }
  }

  private remember(secret: string): void {
    if (secret.length >= MIN_SECRET_LENGTH) this.secrets.add(secret);
  }

  redact(text: string): string {
    let out = text;
    // Longest first: a secret containing another is masked whole.
    for (const secret of [...this.secrets].sort((a, b) => b.length - a.length))
      out = out.replaceAll(secret, MASK);
    return out;
  }
}
