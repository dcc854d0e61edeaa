import type { EvmAccountState } from '../chains/evm.js';
import type { ChainProviders } from '../chains/providers.js';
import { networkLabel, type NetworkDef } from '../chains/registry.js';
import { AppError } from '../platform/errors.js';
import { analyzeEvmAccount } from './evm/account.js';
import { analyzeEvmContract } from './evm/token/analyze.js';
import { finding } from './findings.js';
import { incompleteFinding } from './incomplete.js';
import type { KnownWalletImplementations } from './known/evm.js';
import type { EvmTokenRegistry } from './known/evm-tokens.js';
import type { SolanaKnownRegistry } from './known/solana.js';
import { analyzeSolanaProgram } from './solana/program.js';
import { analyzeSolanaToken } from './solana/token/index.js';
import { analyzeSolanaWallet } from './solana/wallet.js';
import type { ChainAnalysis, TargetType } from './types.js';

/** What a chain analysis is of: a stated target type, or `auto` (preflight: whatever the target is). */
export type Subject = TargetType | 'auto';

/** Budget class of an analysis: a preflight's short deadline, or the full one of risk-v2 / scan. */
export type Mode = 'preflight' | 'full';

/** Time kept back from a preflight's deadline to apply lists, score and answer. */
export const PREFLIGHT_RESERVE_MS = 100;
/** How long after its deadline a full analysis is abandoned when its analyzers ignore the abort. */
const FULL_HARD_STOP_SLACK_MS = 250;

export interface ChainAnalyzerDeps {
  providers: ChainProviders;
  /** Solana wallets: how many recent transactions are read for flagged counterparties. */
  recentTransactions: number;
  solanaKnown: SolanaKnownRegistry;
  walletImplementations: KnownWalletImplementations;
  evmTokens: EvmTokenRegistry;
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
    const work = this.runAnalyzers(network, target, subject, signal, block);
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
    block?: bigint,
  ): Promise<ChainAnalysis> {
    const opts = { network, signal };
    if (network.family === 'evm') return this.analyzeEvm(network, target, subject, signal, block);
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
    return subject === 'auto' && account.kind === 'contract' ? asContract(false, state) : account;
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
