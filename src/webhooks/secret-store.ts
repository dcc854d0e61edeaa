import type { Actor } from '../audit/actor.js';
import { auditResealed } from './audit.js';
import type { WebhookRepository } from './repository.js';
import type { Logger } from '../platform/logger.js';
import { endpointSecretContext, SecretBox, SecretOpenError, sealedPattern } from './secrets.js';

/*
 * Every endpoint's signing secrets at once (secrets.ts seals one): sealing the secrets stored before
 * encryption, at worker start; re-sealing every secret under the current key (`riskwatch secrets
 * rotate-key`); counting them by key (`riskwatch secrets status`). Rows are read in id order, a batch per
 * transaction, locked (`for update`): a row another process is changing (a rotation, a second worker
 * starting) is taken once it commits, and only if it still needs sealing.
 */

/** Endpoints read and re-sealed per transaction. */
const BATCH = 100;

type Column = 'secret' | 'previous_secret';

export interface ResealReport {
  /** The key every secret is now sealed under. */
  kid: string;
  /** Endpoints rewritten. */
  endpoints: number;
  /** Secrets sealed (a rewritten endpoint may have two). */
  secrets: number;
  /** ... of which were stored in plaintext. */
  plaintext: number;
  /** Secrets that did not open (their key is not configured, or they were altered): left as they are. */
  unreadable: { endpoint_id: string; column: Column; kid: string }[];
}

export interface SecretsStatus {
  /** The key new secrets are sealed under (null: none configured). */
  kid: string | null;
  /** The keys configured for opening only (`webhooks.secrets_previous_keys`). */
  previous_kids: string[];
  endpoints: number;
  /** Stored secrets (current and previous) by the key they are sealed under. */
  sealed: Record<string, number>;
  /** Stored secrets from before encryption. */
  plaintext: number;
  /** Sealed secrets whose key is not configured: they cannot sign. */
  unopenable: number;
}

export class WebhookSecretStore {
  constructor(
    private readonly repo: WebhookRepository,
    private readonly box: SecretBox,
  ) {}

  /**
   * Seals every stored secret that is not sealed under the current key (`only: 'plaintext'`: every one
   * stored in plaintext), opening the others with the key they name. Idempotent; needs a current key. With
   * an `actor` (an operator's `secrets rotate-key`), each batch that rewrote endpoints is audited in its
   * transaction (`webhook_secrets.resealed`); the workers' sealing at start is no one's change.
   */
  async reseal(only: 'plaintext' | 'stale', actor?: Actor): Promise<ResealReport> {
    const kid = this.box.kid;
    if (kid === undefined) throw new Error('no secrets key is configured (RISKWATCH_SECRETS_KEY)');
    const fresh = only === 'plaintext' ? sealedPattern() : sealedPattern(kid);
    const report: ResealReport = { kid, endpoints: 0, secrets: 0, plaintext: 0, unreadable: [] };
    let after = '';
    for (;;) {
      const rows = await this.repo.transactional(async (em) => {
        const batch = await this.repo.endpoints.lockUnsealed(em, after, fresh, BATCH);
        const counted = { secrets: report.secrets, plaintext: report.plaintext };
        const rewritten: string[] = [];
        for (const row of batch) {
          const context = endpointSecretContext(row.id);
          const reseal = (column: Column, stored: string): string => {
            if (this.fresh(stored, only)) return stored;
            try {
              const sealed = this.box.seal(this.box.open(stored, context), context);
              report.secrets++;
              if (!SecretBox.isSealed(stored)) report.plaintext++;
              return sealed;
            } catch (err) {
              if (!(err instanceof SecretOpenError)) throw err;
              report.unreadable.push({ endpoint_id: row.id, column, kid: err.kid });
              return stored;
            }
          };
          const secret = reseal('secret', row.secret);
          // A previous secret past its overlap signs nothing: it is dropped, not sealed again.
          const previous =
            row.previous_secret === null || row.previous_expired
              ? null
              : reseal('previous_secret', row.previous_secret);
          if (secret === row.secret && previous === row.previous_secret) continue;
          await this.repo.endpoints.storeSecrets(em, row.id, secret, previous);
          report.endpoints++;
          rewritten.push(row.id);
        }
        if (actor && rewritten.length > 0)
          await auditResealed(em, actor, {
            endpointIds: rewritten,
            secrets: report.secrets - counted.secrets,
            plaintext: report.plaintext - counted.plaintext,
          });
        return batch;
      });
      if (rows.length === 0) return report;
      after = rows.at(-1)!.id;
    }
  }

  /** Stored secrets counted by the key they are sealed under; nothing is opened. */
  async status(): Promise<SecretsStatus> {
    const rows = await this.repo.endpoints.secretKids(sealedPattern());
    const endpoints = await this.repo.endpoints.countAll();
    const known = new Set(this.box.kids);
    const sealed = Object.fromEntries(rows.flatMap((r) => (r.kid === null ? [] : [[r.kid, r.n]])));
    return {
      kid: this.box.kid ?? null,
      previous_kids: this.box.kids.filter((kid) => kid !== this.box.kid),
      endpoints,
      sealed,
      plaintext: rows.find((r) => r.kid === null)?.n ?? 0,
      unopenable: rows.reduce((n, r) => (r.kid !== null && !known.has(r.kid) ? n + r.n : n), 0),
    };
  }

  /**
   * At worker start: seals the secrets stored before encryption (an upgrade) and logs how many. Without a
   * key it warns instead: endpoints cannot be created, and sealed secrets cannot sign. Never throws: a
   * failure is logged, and the next start tries again.
   */
  async sealPlaintextAtStart(logger: Logger): Promise<void> {
    if (this.box.kid === undefined) {
      logger.warn(
        'RISKWATCH_SECRETS_KEY is not set: webhook endpoints cannot be created or rotated (503 ' +
          'secrets_key_missing), and deliveries of endpoints whose secret is sealed stay pending',
      );
      return;
    }
    try {
      const report = await this.reseal('plaintext');
      if (report.secrets > 0)
        logger.info(
          { kid: report.kid, secrets: report.secrets, endpoints: report.endpoints },
          'webhook secrets stored in plaintext were sealed',
        );
    } catch (err) {
      logger.warn(
        { err: { message: (err as Error).message } },
        'sealing the plaintext webhook secrets failed',
      );
    }
  }

  /** Whether a stored value needs no re-sealing in this pass. */
  private fresh(stored: string, only: 'plaintext' | 'stale'): boolean {
    return only === 'plaintext' ? SecretBox.isSealed(stored) : this.box.isCurrent(stored);
  }
}
