import type { Address } from 'viem';
import type { EvmRpc } from '../../chains/evm.js';
import { RpcError } from '../../chains/jsonrpc.js';
import type { NetworkDef } from '../../chains/registry.js';
import type { AccountListView } from '../../lists/cache.js';
import type { SolanaRpc } from '../../chains/solana.js';
import { AppError, invalidRequest } from '../../platform/errors.js';
import type { Finding } from '../findings.js';
import { incompleteFinding } from '../incomplete.js';
import type { KnownWalletImplementations } from '../known/evm.js';
import type { Intent } from '../policy.js';
import type { ChainAnalysis } from '../types.js';
import { resolveTokens } from './evm-reads.js';
import { simulateEvmTransaction } from './evm-transaction.js';
import { judgePayload, type JudgedCounterparty } from './judge.js';
import { inspectMessage } from './message.js';
import { decodeSolanaTransaction } from './solana-decode.js';
import { simulateSolanaTransaction } from './solana-transaction.js';
import { inspectTypedData, type TypedDataInspection } from './typed-data.js';
import type {
  EvmSimulated,
  Payload,
  PayloadCounterparty,
  SignatureInfo,
  Simulation,
  TypedDataInput,
} from './types.js';

/*
 * A shield preflight's payload, inspected within the preflight deadline (docs/risk.md#before-the-user-signs):
 *   1. the payload itself — the transaction simulated (one round trip), the typed data or message decoded
 *      (none);
 *   2. then, together, the counterparties it names through the engine (cached like any target; pinned to
 *      the simulated block) and the metadata of tokens only the simulation revealed (one round trip);
 *   3. the payload rules (judge.ts) on top.
 * A part that did not finish is a `check_incomplete` finding and `complete: false`: never a silent allow.
 */

/** Most counterparties judged per payload (authorities first, then operators, spenders, recipients). */
export const MAX_COUNTERPARTIES = 16;
const ROLE_ORDER: PayloadCounterparty['role'][] = ['authority', 'operator', 'spender', 'recipient'];

export interface PayloadContext {
  network: NetworkDef;
  /** The user's address as the chain knows it (EIP-55 on EVM). */
  from: string;
  intent: Intent;
  lists: AccountListView;
  /** The preflight's target (analysed by the caller): not judged again as a counterparty. */
  target: string | null;
  deadlineAt: number;
  signal: AbortSignal;
  evm: () => EvmRpc;
  solana: () => SolanaRpc;
  /** The engine's chain analysis of an address (cache first), within `budgetMs`, pinned to `block`. */
  analyze: (
    address: string,
    budgetMs: number,
    block?: bigint,
  ) => Promise<{ analysis: ChainAnalysis; cached: boolean }>;
  walletImplementations: KnownWalletImplementations;
}

export interface InspectedPayload {
  simulation: Simulation;
  signature: SignatureInfo | null;
  findings: Finding[];
  complete: boolean;
  /** A counterparty is sanctioned or deny-listed. */
  flagged: boolean;
  /** The chain id the payload itself declares (transaction `chainId`, typed-data domain), if any. */
  declaredChainId: bigint | null;
}

export async function inspectPayload(payload: Payload, ctx: PayloadContext): Promise<InspectedPayload> {
  const left = () => Math.max(1, ctx.deadlineAt - Date.now());
  const incomplete: Finding[] = [];
  let simulation: Simulation;
  let signature: SignatureInfo | null = null;
  let counterparties: PayloadCounterparty[] = [];
  let givesWithoutReturn = false;
  let declaredChainId: bigint | null = null;
  let pending: EvmSimulated | null = null;
  const early: Finding[] = [];

  switch (payload.kind) {
    case 'evm_transaction': {
      declaredChainId = payload.tx.chainId !== undefined ? BigInt(payload.tx.chainId) : null;
      const simulated = await simulateEvmTransaction(ctx.evm(), payload.tx, {
        signal: ctx.signal,
        deadlineMs: left(),
      });
      if (simulated.failure !== undefined)
        incomplete.push(
          incompleteFinding(
            'eth_simulateV1',
            'the transaction simulation',
            failureReason(simulated.failure),
            undefined,
          ),
        );
      simulation = simulated.simulation;
      counterparties = simulated.counterparties;
      pending = simulated;
      break;
    }
    case 'typed_data': {
      const inspection = typedDataInspection(payload.typed, ctx.from as Address);
      signature = inspection.signature;
      declaredChainId = inspection.declaredChainId;
      givesWithoutReturn = inspection.givesWithoutReturn;
      simulation = {
        status: 'not_applicable',
        method: 'signature',
        assetChanges: [],
        approvals: inspection.approvals,
        authorityChanges: [],
      };
      counterparties = inspection.counterparties;
      const tokens = [
        ...new Set(
          inspection.approvals
            .filter((a) => a.asset.type === 'erc20' && a.asset.address)
            .map((a) => a.asset.address!),
        ),
      ];
      pending = { simulation, block: null, counterparties, unresolvedTokens: tokens as Address[] };
      break;
    }
    case 'message': {
      const inspection = inspectMessage(payload.method, payload.data);
      signature = inspection.signature;
      simulation = {
        status: 'not_applicable',
        method: 'signature',
        assetChanges: [],
        approvals: [],
        authorityChanges: [],
      };
      early.push(
        ...inspection.findings.map((f) => ({ ...f, subject: { role: 'signature' as const, address: null } })),
      );
      break;
    }
    case 'solana_transaction': {
      const rpc = ctx.solana();
      const decoded = await decodeSolanaTransaction(rpc, payload.wire, {
        signal: ctx.signal,
        deadlineMs: left(),
      });
      if (!decoded.signers.includes(ctx.from))
        throw invalidRequest(`from (${ctx.from}) is not a required signer of this transaction.`, [
          { path: 'from', message: `expected one of the signers: ${decoded.signers.join(', ')}` },
        ]);
      if (ctx.target !== null && !decoded.lookupFailure && !decoded.accountKeys.includes(ctx.target))
        throw invalidRequest(`target ${ctx.target} is not one of the transaction's account keys.`, [
          { path: 'target', message: "must be one of the transaction's accounts" },
        ]);
      if (decoded.lookupFailure !== undefined) {
        incomplete.push(
          incompleteFinding(
            'getMultipleAccounts',
            'the address lookup tables',
            failureReason(decoded.lookupFailure),
            undefined,
          ),
        );
        simulation = {
          status: 'unavailable',
          method: 'decode',
          error: 'the address lookup tables could not be read',
          assetChanges: [],
          approvals: [],
          authorityChanges: [],
        };
        break;
      }
      const simulated = await simulateSolanaTransaction(rpc, decoded, ctx.from, {
        signal: ctx.signal,
        deadlineMs: left(),
      });
      if (simulated.failure !== undefined)
        incomplete.push(
          incompleteFinding(
            'simulateTransaction',
            'the transaction simulation',
            failureReason(simulated.failure),
            simulated.simulation.slot,
          ),
        );
      simulation = simulated.simulation;
      counterparties = simulated.counterparties;
      early.push(
        ...simulated.findings.map((f) => ({
          ...f,
          subject: { role: 'transaction' as const, address: null },
        })),
      );
      break;
    }
  }

  const readMethod = ctx.network.family === 'evm' ? 'eth_getCode' : 'getMultipleAccounts';
  const ordered = counterparties
    .filter((c) => ctx.target === null || !sameAddress(ctx.network, c.address, ctx.target))
    .sort((a, b) => ROLE_ORDER.indexOf(a.role) - ROLE_ORDER.indexOf(b.role));
  const judged = ordered.slice(0, MAX_COUNTERPARTIES);
  if (ordered.length > judged.length)
    incomplete.push(
      incompleteFinding(
        readMethod,
        'the counterparties',
        `only the first ${MAX_COUNTERPARTIES} of ${ordered.length} counterparties were checked`,
        undefined,
      ),
    );
  const block = pending?.block ?? undefined;
  const [tokenRead, ...analyses] = await Promise.allSettled([
    pending && pending.unresolvedTokens.length > 0
      ? resolveTokens(ctx.evm(), ctx.from as Address, pending, { signal: ctx.signal, deadlineMs: left() })
      : Promise.resolve(),
    ...judged.map((c) => ctx.analyze(c.address, left(), block ?? undefined)),
  ]);
  if (tokenRead.status === 'rejected')
    incomplete.push(
      incompleteFinding(
        'eth_call',
        'the token balances and metadata',
        failureReason(tokenRead.reason),
        undefined,
      ),
    );
  let complete = incomplete.length === 0 && simulation.status !== 'unavailable';
  const withAnalyses: JudgedCounterparty[] = judged.map((c, i) => {
    const result = analyses[i]!;
    if (result.status === 'fulfilled') {
      if (!result.value.analysis.complete) complete = false;
      return { ...c, analysis: result.value.analysis };
    }
    complete = false;
    incomplete.push({
      ...incompleteFinding(readMethod, `the ${c.role} ${c.address}`, failureReason(result.reason), undefined),
      subject: { role: c.role, address: c.address },
    });
    return { ...c, analysis: null };
  });
  for (const c of withAnalyses)
    for (const f of c.analysis?.findings ?? []) if (f.code === 'check_incomplete') complete = false;

  const judgement = judgePayload({
    network: ctx.network,
    from: ctx.from,
    intent: ctx.intent,
    lists: ctx.lists,
    simulation,
    signature,
    declaredChainId,
    counterparties: withAnalyses,
    walletImplementations: ctx.walletImplementations,
    givesWithoutReturn,
  });
  return {
    simulation,
    signature,
    findings: [...early, ...incomplete, ...judgement.findings],
    complete,
    flagged: judgement.flagged,
    declaredChainId,
  };
}

/** EVM addresses compare whatever their case; Solana's base58 is case-sensitive. */
const sameAddress = (network: NetworkDef, a: string, b: string) =>
  network.family === 'evm' ? a.toLowerCase() === b.toLowerCase() : a === b;

/** inspectTypedData, with anything its checks missed in a message that hashed reported as a 400, not a 500. */
function typedDataInspection(typed: TypedDataInput, from: Address): TypedDataInspection {
  try {
    return inspectTypedData(typed, from);
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw invalidRequest('typed_data does not fit the signature its primary type names.', [
      { path: 'typed_data.message', message: 'a field does not have the value its type needs' },
    ]);
  }
}

/** A failure as `incompleteFinding` takes it: provider and node errors as they are, anything else in words. */
function failureReason(err: unknown): unknown {
  if (err instanceof AppError || err instanceof RpcError || typeof err === 'string') return err;
  if (err instanceof Error && (err.name === 'TimeoutError' || err.name === 'AbortError'))
    return 'the preflight deadline passed';
  return err instanceof Error ? err.message : 'no answer';
}
