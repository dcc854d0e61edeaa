import type { Address } from 'viem';
import { inferChainFromAddress, parseAddress } from '../chains/addresses.js';
import type { ChainProviders } from '../chains/providers.js';
import { networkLabel, type NetworkDef } from '../chains/registry.js';
import type { ListsCache } from '../lists/cache.js';
import { AppError } from '../platform/errors.js';
import type { CachedAnalysis } from './analysis-cache.js';
import { unreadAnalysis } from './chain-analysis.js';
import { applyContext } from './context.js';
import { classifyEvmAccount, PROXY_SLOTS } from './evm/account.js';
import { finding, type Finding } from './findings.js';
import { incompleteFinding } from './incomplete.js';
import type { KnownWalletImplementations } from './known/evm.js';
import { decide, type Decision, type FailMode } from './policy.js';
import { type RiskLevel } from './scoring.js';
import { classifySolanaAccount } from './solana/kind.js';
import type { ChainAnalysis, TargetKind } from './types.js';

/**
 * How deep a bulk screening reads (docs/api.md, "Screenings"):
 * - `lists`: sanctions and the account's deny/allow lists (and look-alikes of its allow list), from
 *   memory; no provider call.
 * - `state`: plus one batched read of each target's account (Solana `getMultipleAccounts` per 100, EVM
 *   code/balance/nonce/proxy slots in batches at one block) and the findings that state alone supports:
 *   kind, EIP-7702 delegation, EIP-1967 proxy, fresh/unused address.
 * - `full`: the whole analysis of each target as a preflight sees it (`auto`), every check of risk-v2.
 */
export type ScreenDepth = 'lists' | 'state' | 'full';

/** A target checked and resolved: the address as the chain knows it, on a configured network. */
export interface ScreenTarget {
  address: string;
  network: NetworkDef;
}

/** One target's verdict at a depth, and the decision a `transfer` preflight would give it. */
export interface ScreenVerdict {
  targetKind: TargetKind | null;
  riskScore: number;
  riskLevel: RiskLevel;
  decision: Decision;
  /** Judged against what the depth reads: a `lists` row that read the lists is complete. */
  complete: boolean;
  findings: Finding[];
}

export interface ScreenerDeps {
  providers: ChainProviders;
  lists: ListsCache;
  walletImplementations: KnownWalletImplementations;
  failMode: FailMode;
  /** The full-mode chain analysis of one target (cached like every risk-v2 call). */
  analyze: (network: NetworkDef, address: string) => Promise<CachedAnalysis>;
  /** Full screenings: targets analysed at once per call of `screen`. */
  fullConcurrency?: number;
}

/**
 * The target checked against its chain's address rules, on a configured network: `chain`/`network` when
 * given, else the address format decides (`0x…` ethereum, base58 solana), as a preflight resolves it.
 * Throws `invalid_address` / `unsupported_chain` (AppError) for the caller to report per target.
 */
export function resolveScreenTarget(
  providers: Pick<ChainProviders, 'resolve'>,
  target: string,
  chain?: string,
  network?: string,
): ScreenTarget {
  if (chain !== undefined || network !== undefined) {
    const def = providers.resolve(chain, network);
    return { address: parseAddress(def, target, 'target'), network: def };
  }
  const inferred = inferChainFromAddress(target, 'target');
  return {
    address: inferred.address,
    network: providers.resolve(inferred.network.chain, inferred.network.network),
  };
}

/** What `lists` depth knows of a target's chain state: nothing, and it does not claim to. */
const LISTS_ONLY: ChainAnalysis = {
  kind: 'account',
  findings: [],
  facts: { exists: null, kind: null },
  complete: true,
  dataAsOf: {},
  listInputs: {},
};

/**
 * The risk side of bulk screenings: resolves targets the way a preflight does, reads state in batches,
 * and judges each target with the account's lists and the `transfer` intent, as one preflight would.
 */
export class Screener {
  constructor(private readonly deps: ScreenerDeps) {}

  resolve(target: string, chain?: string, network?: string): ScreenTarget {
    return resolveScreenTarget(this.deps.providers, target, chain, network);
  }

  /** Verdicts of `targets` (in order) for `accountId` at `depth`. Never throws for one target's read. */
  async screen(accountId: string, depth: ScreenDepth, targets: readonly ScreenTarget[]) {
    const lists = await this.deps.lists.view(accountId);
    const analyses =
      depth === 'lists'
        ? targets.map(() => LISTS_ONLY)
        : depth === 'state'
          ? await this.stateAnalyses(targets)
          : await this.fullAnalyses(targets);
    return targets.map((t, i): ScreenVerdict => {
      const analysis = analyses[i]!;
      const judged = applyContext(analysis, {
        network: t.network,
        target: t.address,
        intent: 'transfer',
        lists,
      });
      const { allowed, denied, sanctioned } = judged.listStatus;
      return {
        targetKind: analysis.facts.kind === null ? null : analysis.kind,
        riskScore: judged.riskScore,
        riskLevel: judged.riskLevel,
        decision: decide({
          level: judged.riskLevel,
          complete: analysis.complete,
          allowlisted: allowed !== null && denied === null,
          sanctioned: sanctioned !== null,
          failMode: this.deps.failMode,
        }),
        complete: analysis.complete,
        findings: judged.findings,
      };
    });
  }

  /** One batched read per network: what each account is, from its state alone. */
  private async stateAnalyses(targets: readonly ScreenTarget[]): Promise<ChainAnalysis[]> {
    const out = new Array<ChainAnalysis>(targets.length);
    const groups = new Map<NetworkDef, number[]>();
    targets.forEach((t, i) => groups.set(t.network, [...(groups.get(t.network) ?? []), i]));
    await Promise.all(
      [...groups].map(async ([network, indexes]) => {
        const addresses = indexes.map((i) => targets[i]!.address);
        let read: ChainAnalysis[];
        try {
          read =
            network.family === 'solana'
              ? await this.solanaStates(network, addresses)
              : await this.evmStates(network, addresses);
        } catch (err) {
          const why =
            err instanceof AppError
              ? err
              : new AppError('provider_unavailable', `The ${networkLabel(network)} state read failed.`);
          read = addresses.map(() => unreadAnalysis(network, why));
        }
        indexes.forEach((i, k) => (out[i] = read[k]!));
      }),
    );
    return out;
  }

  private async solanaStates(network: NetworkDef, addresses: string[]): Promise<ChainAnalysis[]> {
    const { slot, accounts } = await this.deps.providers.solana(network).getMultipleAccounts(addresses);
    return addresses.map((address, i): ChainAnalysis => {
      const account = accounts[i] ?? null;
      const { kind, ownerProgram } = classifySolanaAccount(account);
      const findings = account
        ? []
        : [
            finding(
              'account_not_found',
              `No account exists at ${address} (slot ${slot}); its transaction history is not read at ` +
                `depth "state".`,
              { method: 'getMultipleAccounts', slot, value: { address, account: null } },
            ),
          ];
      return {
        kind,
        findings,
        facts: {
          exists: account !== null,
          kind,
          owner_program: ownerProgram,
          executable: account?.executable ?? false,
          balance_raw: (account?.lamports ?? 0n).toString(),
        },
        complete: true,
        dataAsOf: { slot },
        listInputs: {},
      };
    });
  }

  private async evmStates(network: NetworkDef, addresses: string[]): Promise<ChainAnalysis[]> {
    const rpc = this.deps.providers.evm(network);
    const block = await rpc.blockNumber();
    // Issued together, so the JSON-RPC client sends them as batches (batch_max calls each).
    const states = await Promise.all(
      addresses.map((a) => rpc.readAccount(a as Address, { block, storageSlots: PROXY_SLOTS })),
    );
    return states.map((state, i) =>
      classifyEvmAccount(addresses[i] as Address, state, {
        network,
        knownWalletImplementations: this.deps.walletImplementations,
      }),
    );
  }

  /** Each target's full analysis, a few at once; one that fails is unknown (never safe), not an error. */
  private async fullAnalyses(targets: readonly ScreenTarget[]): Promise<ChainAnalysis[]> {
    const out = new Array<ChainAnalysis>(targets.length);
    let next = 0;
    const worker = async () => {
      for (let i = next++; i < targets.length; i = next++) {
        const t = targets[i]!;
        try {
          out[i] = (await this.deps.analyze(t.network, t.address)).analysis;
        } catch (err) {
          const method = t.network.family === 'evm' ? 'eth_getCode' : 'getMultipleAccounts';
          out[i] =
            err instanceof AppError && err.code === 'provider_unavailable'
              ? unreadAnalysis(t.network, err)
              : {
                  ...unreadAnalysis(t.network, new AppError('provider_unavailable', 'analysis failed')),
                  findings: [incompleteFinding(method, 'the analysis', err, undefined)],
                };
        }
      }
    };
    const width = Math.min(this.deps.fullConcurrency ?? 8, targets.length);
    await Promise.all(Array.from({ length: width }, worker));
    return out;
  }
}
