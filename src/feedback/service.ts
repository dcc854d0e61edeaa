import { actorName, type Actor } from '../audit/actor.js';
import { recordAudit } from '../audit/log.js';
import { inferChainFromAddress, parseAddress } from '../chains/addresses.js';
import { clip, resolveNetwork, type NetworkDef } from '../chains/registry.js';
import { normaliseAddress } from '../lists/addresses.js';
import type { ListsService } from '../lists/service.js';
import { keysetPage, type Page } from '../platform/cursor.js';
import { AppError, invalidRequest, notFound, type FieldError } from '../platform/errors.js';
import { newId } from '../platform/ids.js';
import type { Orm } from '../db/orm.js';
import { run, time, Where, type Time } from '../db/sql.js';
import type { UsageService } from '../usage/service.js';
import type { FeedbackKind } from './entities.js';
import { LIST_OF, type FeedbackQuery, type NewFeedback } from './schemas.js';

/** One piece of feedback as the service keeps it (targets normalised: EVM lower case). */
export interface FeedbackView {
  id: string;
  kind: FeedbackKind;
  target: string;
  chain: string;
  network: string;
  requestId: string | null;
  usageId: string | null;
  endpoint: string | null;
  findingCode: string | null;
  note: string | null;
  /** `created` is known only when the feedback is given (null on reads). */
  applied: { list: 'deny' | 'allow'; entryId: string; created: boolean | null } | null;
  createdAt: Date;
  createdBy: string;
}

interface FeedbackRow {
  id: string;
  kind: FeedbackKind;
  target: string;
  chain: string | null;
  network: string | null;
  request_id: string | null;
  usage_id: string | null;
  endpoint: string | null;
  finding_code: string | null;
  note: string | null;
  applied_list: 'deny' | 'allow' | null;
  list_entry_id: string | null;
  created_at: Time;
  created_by: string;
}

const COLUMNS =
  'id, kind, target, chain, network, request_id, usage_id, endpoint, finding_code, note, applied_list, ' +
  'list_entry_id, created_at, created_by';

const viewOf = (r: FeedbackRow, created: boolean | null = null): FeedbackView => ({
  id: r.id,
  kind: r.kind,
  target: r.target,
  chain: r.chain ?? '',
  network: r.network ?? '',
  requestId: r.request_id,
  usageId: r.usage_id,
  endpoint: r.endpoint,
  findingCode: r.finding_code,
  note: r.note,
  applied:
    r.applied_list && r.list_entry_id ? { list: r.applied_list, entryId: r.list_entry_id, created } : null,
  createdAt: time(r.created_at),
  createdBy: r.created_by,
});

/** What the feedback is about: a normalised address on one network. */
interface Subject {
  target: string;
  chain: string;
  network: string;
  requestId: string | null;
  usageId: string | null;
  endpoint: string | null;
}

const bad = (detail: string, errors: FieldError[]) => invalidRequest(detail, errors);

/**
 * Verdict feedback (docs/api.md#verdict-feedback): a user's word that a verdict was wrong (a false
 * positive or negative) or right and malicious, about a call they made (by its request id, through its
 * usage record) or a target. With `apply` it acts on the target in the same transaction as the feedback
 * and its audit record: the allow list for a false positive, the deny list otherwise (ListsService
 * .ensureEntry reuses an entry already there). The risk engine is told after the commit, so the next
 * preflight sees the list. Every query is scoped to one account.
 */
export class FeedbackService {
  /** Feedback names chains, not RPC endpoints: every network riskwatch knows counts, as for lists. */
  private readonly registry: { networks: readonly NetworkDef[]; configured: readonly NetworkDef[] };

  constructor(
    private readonly orm: Orm,
    private readonly lists: ListsService,
    private readonly usage: UsageService,
    networks: readonly NetworkDef[],
  ) {
    this.registry = { networks, configured: networks };
  }

  async create(accountId: string, actor: Actor, input: NewFeedback): Promise<FeedbackView> {
    const subject = await this.subjectOf(accountId, input);
    const id = newId('fbk');
    const list = input.apply ? LIST_OF[input.kind] : null;
    const note = input.note || null;
    const findingCode = input.finding_code ?? null;
    const done = await this.orm.em.fork().transactional(async (em) => {
      const applied = list
        ? await this.lists.ensureEntry(
            em,
            accountId,
            list,
            {
              target: subject.target,
              chain: subject.chain,
              network: subject.network,
              reason: `feedback ${id}: ${input.kind}${findingCode ? ` (${findingCode})` : ''}`,
            },
            actor,
          )
        : null;
      const [row] = await run<FeedbackRow[]>(
        em,
        `insert into feedback (id, account_id, created_at, created_by, kind, request_id, usage_id, endpoint,
            target, chain, network, finding_code, note, applied_list, list_entry_id)
         values (?, ?, date_trunc('milliseconds', now()), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
         returning ${COLUMNS}`,
        [
          id,
          accountId,
          actorName(actor),
          input.kind,
          subject.requestId,
          subject.usageId,
          subject.endpoint,
          subject.target,
          subject.chain,
          subject.network,
          findingCode,
          note,
          list,
          applied?.entry.id ?? null,
        ],
      );
      const view = viewOf(row!, applied ? applied.created : null);
      await recordAudit(em, actor, {
        accountId,
        action: 'feedback.created',
        resourceType: 'feedback',
        resourceId: id,
        after: {
          kind: view.kind,
          target: subject.target,
          chain: view.chain,
          network: view.network,
          request_id: view.requestId,
          usage_id: view.usageId,
          finding_code: view.findingCode,
          note: view.note,
          applied: view.applied && { list: view.applied.list, entry_id: view.applied.entryId },
        },
      });
      return { view, listChanged: applied?.created === true };
    });
    if (done.listChanged) await this.lists.changed(accountId);
    return done.view;
  }

  /** The account's feedback, newest first, filtered by kind and target. */
  async page(accountId: string, q: FeedbackQuery): Promise<Page<FeedbackView>> {
    const where = new Where('account_id = ?', accountId)
      .andIf(q.kind, 'kind = ?')
      .andIf(q.target === undefined ? undefined : normaliseAddress(q.target), 'target = ?')
      .before(q.cursor, 'fbk', 'created_at', 'id');
    const rows = await run<FeedbackRow[]>(
      this.orm,
      `select ${COLUMNS} from feedback where ${where.sql} order by created_at desc, id desc limit ?`,
      [...where.params, q.limit + 1],
    );
    return keysetPage(
      rows.map((r) => viewOf(r)),
      q.limit,
      (f) => ({
        at: f.createdAt.toISOString(),
        id: f.id,
      }),
    );
  }

  /** One piece of the account's feedback; another account's is not found. */
  async get(accountId: string, id: string): Promise<FeedbackView> {
    const [row] = await run<FeedbackRow[]>(
      this.orm,
      `select ${COLUMNS} from feedback where account_id = ? and id = ?`,
      [accountId, id],
    );
    if (!row) throw notFound(`Feedback "${clip(id)}"`);
    return viewOf(row);
  }

  /**
   * The call and target the feedback is about: the usage record `request_id` names (its target, chain and
   * network), or the `target` on `chain` / `network`. Exactly one of the two ways.
   */
  private async subjectOf(accountId: string, input: NewFeedback): Promise<Subject> {
    const { request_id: requestId, target } = input;
    if ((requestId === undefined) === (target === undefined))
      throw bad('Name the call (`request_id`) or the target (`target` and `chain`), not both.', [
        { path: requestId === undefined ? '(body)' : 'target', message: 'give request_id or target' },
      ]);
    if (requestId !== undefined) {
      if (input.chain !== undefined || input.network !== undefined)
        throw bad('With `request_id`, the chain and network are the call’s.', [
          { path: input.chain !== undefined ? 'chain' : 'network', message: 'not with request_id' },
        ]);
      const call = await this.usage.callByRequestId(accountId, requestId);
      if (!call)
        throw new AppError(
          'not_found',
          `No call of this account with request id "${clip(requestId)}" was found (calls are recorded ` +
            'within a few seconds of their answer; GET /api/v1/usage lists them).',
        );
      if (!call.target)
        throw new AppError(
          'no_target',
          `The call with request id "${clip(requestId)}" was about no single target (only risk-v2, ` +
            'scan/token, approvals and a preflight that named its target are): give `target` and `chain` instead.',
        );
      return {
        ...this.resolve(call.target, call.chain, call.network),
        requestId,
        usageId: call.id,
        endpoint: call.endpoint,
      };
    }
    if (input.chain === undefined)
      throw bad('`chain` is required with `target`.', [{ path: 'chain', message: 'required with target' }]);
    return {
      ...this.resolve(target!, input.chain, input.network),
      requestId: null,
      usageId: null,
      endpoint: null,
    };
  }

  /** The address checked by its chain's rules and normalised; no chain at all: the address format decides. */
  private resolve(
    address: string,
    chain: string | null | undefined,
    network: string | null | undefined,
  ): Pick<Subject, 'target' | 'chain' | 'network'> {
    if (!chain && !network) {
      const inferred = inferChainFromAddress(address);
      return { target: normaliseAddress(inferred.address), ...pick(inferred.network) };
    }
    // A network name alone (`sepolia`) belongs to the chain the address format implies; a CAIP-2 id names both.
    const chainName =
      chain || (network!.includes(':') ? undefined : inferChainFromAddress(address).network.chain);
    const def = resolveNetwork(chainName, network || undefined, this.registry);
    return { target: normaliseAddress(parseAddress(def, address)), ...pick(def) };
  }
}

const pick = (def: NetworkDef) => ({ chain: def.chain, network: def.network });
