import type { Address } from 'viem';
import type { EvmAccountState, EvmRpc } from '../chains/evm.js';
import { parseEvmAddress } from '../chains/addresses.js';
import type { ChainProviders } from '../chains/providers.js';
import { networkLabel, type NetworkDef } from '../chains/registry.js';
import { AppError } from '../platform/errors.js';
import { analyzeEvmAccount } from './evm/account.js';
import { analyzeEvmContract } from './evm/token/analyze.js';
import { judgeWalletApprovals, lookbackStart } from './evm/wallet-approvals.js';
import { finding } from './findings.js';
import { incompleteFinding } from './incomplete.js';
import type { KnownWalletImplementations } from './known/evm.js';
import type { EvmTokenRegistry } from './known/evm-tokens.js';
import type { SolanaKnownRegistry } from './known/solana.js';
import { analyzeSolanaProgram } from './solana/program.js';
import { analyzeSolanaToken } from './solana/token/index.js';
import { analyzeSolanaWallet } from './solana/wallet.js';
import type { ChainAnalysis, TargetType } from './types.js';

/**
 * What a chain analysis is of: a stated target type, `auto` (preflight: whatever the target is), or
 * `wallet_approvals` (risk-v2 `wallet`: on EVM also its outstanding approvals, from logs).
 */
export type Subject = TargetType | 'auto' | 'wallet_approvals';

/** Budget class of an analysis: a preflight's short deadline, or the full one of risk-v2 / scan. */
export type Mode = 'preflight' | 'full';

/** Time kept back from a preflight's deadline to apply lists, score and answer. */
export const PREFLIGHT_RESERVE_MS = 100;
/** Time an approvals read leaves of a full analysis's deadline, to judge and answer. */
const APPROVALS_RESERVE_MS = 500;
/** How long after its deadline a full analysis is abandoned when its analyzers ignore the abort. */
const FULL_HARD_STOP_SLACK_MS = 250;

export interface ChainAnalyzerDeps {
  providers: ChainProviders;
  /** Solana wallets: how many recent transactions are read for flagged counterparties. */
  recentTransactions: number;
  solanaKnown: SolanaKnownRegistry;
  walletImplementations: KnownWalletImplementations;
  evmTokens: EvmTokenRegistry;
  /** EVM wallets: how far back approvals are read (`risk.evm.approvals_lookback_days`). */
  approvalsLookbackDays: number;
}

/**
 * Runs the analyzers of a subject (list-free, the same for every account) on a network, within a
 * deadline. Knows nothing of caching or of the caller's lists.
 */
export class ChainAnalyzer {
  constructor(private readonly deps: ChainAnalyzerDeps) {}

  /**
   * The analysis of `target` as `subject`, with an abort signal at `ms` (sub-checks that did not finish
   * become `check_incomplete`) and a hard stop just after it (→ `provider_unavailable`). `block` pins an
   * EVM analysis to a block already known (a payload's simulated block), saving its `eth_blockNumber`.
   */
  async analyzeWithin(
    network: NetworkDef,
    target: string,
    subject: Subject,
    ms: number,
    mode: Mode,
    block?: bigint,
  ): Promise<ChainAnalysis> {
    const signal = AbortSignal.timeout(Math.max(1, ms));
    const work = this.runAnalyzers(network, target, subject, signal, Date.now() + ms, block);
    let timer: NodeJS.Timeout | undefined;
    const hardStop = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new AppError(
              'provider_unavailable',
              `The ${networkLabel(network)} analysis of ${target} did not finish within ${ms} ms.`,
            ),
          ),
        ms + (mode === 'preflight' ? PREFLIGHT_RESERVE_MS / 2 : FULL_HARD_STOP_SLACK_MS),
      );
    });
    try {
      return await Promise.race([work, hardStop]);
    } finally {
      clearTimeout(timer);
      work.catch(() => undefined);
    }
  }

  private async runAnalyzers(
    network: NetworkDef,
    target: string,
    subject: Subject,
    signal: AbortSignal,
    deadlineAt: number,
    block?: bigint,
  ): Promise<ChainAnalysis> {
    const opts = { network, signal };
    if (network.family === 'evm') return this.analyzeEvm(network, target, subject, signal, deadlineAt, block);
    const rpc = this.deps.providers.solana(network);
    const wallet = () =>
      analyzeSolanaWallet(rpc, target, { ...opts, recentTxLimit: this.deps.recentTransactions });
    const token = async (): Promise<ChainAnalysis> => {
      const result = await analyzeSolanaToken(rpc, target, { ...opts, known: this.deps.solanaKnown });
      if (result.status === 'mint') return result;
      if (result.status === 'not_found') return missingAccount(target, result.dataAsOf.slot);
      return {
        kind: result.kind,
        findings: [],
        facts: { exists: true, kind: result.kind, owner_program: result.ownerProgram },
        complete: true,
        dataAsOf: result.dataAsOf,
        listInputs: {},
      };
    };
    switch (subject) {
      case 'wallet':
      case 'wallet_approvals':
        return wallet();
      case 'program':
        return analyzeSolanaProgram(rpc, target, opts);
      case 'token':
        return token();
      case 'contract':
        throw new Error('contract is not a Solana target type'); // refused before (FAMILIES_OF)
      case 'auto': {
        // What the wallet read finds decides whether the token or program analysis adds to it.
        const base = await wallet();
        if (base.kind === 'token') return mergeAnalyses(base, await token());
        if (base.kind === 'program')
          return mergeAnalyses(base, await analyzeSolanaProgram(rpc, target, opts));
        return base;
      }
    }
  }

  /**
   * EVM: a wallet is its account; a contract or a token is the account plus, when it answers as an
   * ERC-20, its token analysis (evm/token/) — with the buy/transfer/sell simulation only when asked for
   * as a `token`. A preflight reads the account first and adds the token checks (no simulation, so its
   * deadline holds) only when it finds a contract.
   */
  private async analyzeEvm(
    network: NetworkDef,
    target: string,
    subject: Subject,
    signal: AbortSignal,
    deadlineAt: number,
    block?: bigint,
  ): Promise<ChainAnalysis> {
    const rpc = this.deps.providers.evm(network);
    const common = {
      network,
      signal,
      ...(block !== undefined ? { block } : {}),
      knownWalletImplementations: this.deps.walletImplementations,
    };
    const asContract = (trade: boolean, state?: EvmAccountState) =>
      analyzeEvmContract(rpc, target, {
        ...common,
        registry: this.deps.evmTokens,
        trade,
        ...(state ? { state, block: state.block } : {}),
      });
    if (subject === 'contract' || subject === 'token') return asContract(subject === 'token');
    let state: EvmAccountState | undefined;
    const account = await analyzeEvmAccount(rpc, target, { ...common, onState: (s) => (state = s) });
    if (subject === 'auto' && account.kind === 'contract') return asContract(false, state);
    // Even a never-used address: an EOA that only holds tokens and signed Permit2 permits has approvals.
    if (subject === 'wallet_approvals')
      return this.withApprovals(rpc, network, parseEvmAddress(target), account, signal, deadlineAt);
    return account;
  }

  /**
   * An EVM wallet's analysis plus its outstanding approvals over the lookback window, read at the
   * analysis's block within what is left of its deadline (the log scan stops early rather than run past
   * it: the window it did not cover is named, `complete: false`).
   */
  private async withApprovals(
    rpc: EvmRpc,
    network: NetworkDef,
    owner: Address,
    account: ChainAnalysis,
    signal: AbortSignal,
    deadlineAt: number,
  ): Promise<ChainAnalysis> {
    const head = BigInt(account.dataAsOf.block!);
    try {
      const judged = await judgeWalletApprovals(rpc, owner, {
        network,
        head,
        fromBlock: lookbackStart(network, head, this.deps.approvalsLookbackDays),
        signal,
        deadlineMs: Math.max(100, deadlineAt - Date.now() - APPROVALS_RESERVE_MS),
        walletImplementations: this.deps.walletImplementations,
      });
      const incomplete = judged.view.complete
        ? []
        : [
            finding(
              'check_incomplete',
              `The approvals were not all read: ${judged.view.gaps.map((g) => `blocks ${g.from_block}–${g.to_block}: ${g.reason}`).join('; ')}. ` +
                'Unknown is not "no risk": approvals granted there are not known.',
              { method: 'eth_getLogs', block: Number(head), value: { gaps: judged.view.gaps } },
            ),
          ];
      return {
        ...account,
        findings: [...account.findings, ...judged.findings, ...incomplete],
        complete: account.complete && judged.view.complete,
        listInputs: { ...account.listInputs, approvalSpenders: judged.spenders },
        approvals: judged.view,
      };
    } catch (err) {
      return {
        ...account,
        findings: [
          ...account.findings,
          finding('check_incomplete', `The approvals were not read: ${(err as Error).message}`, {
            method: 'eth_getLogs',
            block: Number(head),
            value: { reason: (err as Error).message },
          }),
        ],
        complete: false,
        approvals: null,
      };
    }
  }
}

/** A token-subject read that found no account (risk-v2 `token` → account_not_found; scan/token → 404). */
function missingAccount(target: string, slot: number): ChainAnalysis {
  return {
    kind: 'missing',
    findings: [
      finding('account_not_found', `No account exists at ${target} (slot ${slot}).`, {
        method: 'getMultipleAccounts',
        slot,
        value: null,
      }),
    ],
    facts: { exists: false, kind: 'missing' },
    complete: true,
    dataAsOf: { slot },
    listInputs: {},
  };
}

/** A preflight whose chain read failed outright (EVM reads are one batch): everything unknown. */
export function unreadAnalysis(network: NetworkDef, err: AppError): ChainAnalysis {
  const method = network.family === 'evm' ? 'eth_getCode' : 'getMultipleAccounts';
  return {
    kind: 'account',
    findings: [incompleteFinding(method, 'the target account', err, undefined)],
    facts: { exists: null, kind: null },
    complete: false,
    dataAsOf: {},
    listInputs: {},
  };
}

/** The wallet read of a Solana target plus the analysis of what it turned out to be (token, program). */
function mergeAnalyses(base: ChainAnalysis, specific: ChainAnalysis): ChainAnalysis {
  const slots = [base.dataAsOf.slot, specific.dataAsOf.slot].filter((s): s is number => s !== undefined);
  return {
    kind: specific.kind,
    findings: [...base.findings, ...specific.findings.filter((f) => f.code !== 'account_not_found')],
    facts: { ...base.facts, ...specific.facts },
    complete: base.complete && specific.complete,
    dataAsOf: slots.length ? { slot: Math.max(...slots) } : {},
    listInputs: base.listInputs,
  };
}
