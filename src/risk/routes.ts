import type { Context } from 'koa';
import { defineRoute } from '../http/route.js';
import type { ImpactService } from '../impact/service.js';
import { apiKeyOf, userOf } from '../http/state.js';
import {
  countAnswered,
  presentApprovals,
  presentAssessment,
  presentPreflight,
  presentTokenScan,
} from './present.js';
import {
  approvalsAnswerSchema,
  approvalsQuery,
  assessmentSchema,
  riskV2Body,
  scanBody,
  scanSchema,
  SCORING,
} from './schemas.js';
import type { VerdictMetrics } from './metrics.js';
import { preflightBody, preflightSchema } from './preflight-schemas.js';
import type { RiskService } from './service.js';

/**
 * What the call's usage record says it was about (`POST /api/v1/feedback` names a call by its request id
 * and acts on its target): the request's own target first, so a call that fails still says it, then the
 * verdict's (EIP-55, chain and network resolved). A field set on the request state, no await: the usage
 * recorder carries it when the call finishes.
 */
function about(ctx: Context, target: string | undefined, chain?: string, network?: string): void {
  ctx.state.usageDetail = { target, chain, network };
}

/**
 * The risk engine over HTTP: risk-v2, scan/token and shield preflight (docs/risk.md; shapes in the
 * OpenAPI). Each handler asks the engine for a verdict, counts what was answered (impact counters, and the
 * `riskwatch_verdicts_total` / `riskwatch_preflight_decisions_total` metrics), and presents it.
 */
export function riskRoutes(risk: RiskService, impact: ImpactService, metrics: VerdictMetrics) {
  return [
    defineRoute({
      method: 'post',
      path: '/api/web3/risk-v2',
      operationId: 'assessRisk',
      summary: 'Assess a wallet, contract, program or token',
      description:
        'Findings with evidence (RPC method, slot/block, raw value), observed facts and a score. ' +
        SCORING +
        ' A target whose real kind differs from `target_type` gets `target_type_mismatch`. The chain analysis ' +
        'is cached per (chain, network, target, target_type) for a TTL by level; your lists apply on top. ' +
        'A provider that fails or times out → `503 provider_unavailable` (retryable).',
      tag: 'Risk',
      auth: 'jwt',
      body: riskV2Body,
      responses: { 200: { description: 'The assessment', schema: assessmentSchema } },
      handler: async (ctx, { body }) => {
        about(ctx, body.target, body.chain, body.network);
        const verdict = await risk.evaluate(
          userOf(ctx).accountId,
          { address: body.target, chain: body.chain, network: body.network },
          { targetType: body.target_type },
        );
        about(ctx, verdict.target, verdict.network.chain, verdict.network.network);
        countAnswered(impact, 'assessments', verdict);
        metrics.answered('risk-v2', verdict);
        return { body: presentAssessment(verdict) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/scan/token',
      operationId: 'scanToken',
      summary: 'Scan a token: a Solana mint (SPL Token or Token-2022) or an ERC-20',
      description:
        'Solana: authorities, every Token-2022 extension, Metaplex / Token-2022 metadata, holder concentration ' +
        '(known pools, lockers and burn addresses excluded and labelled), copycat symbols, and well-known mints ' +
        'with their expected authorities (findings shown as suppressed). ERC-20 (any configured EVM network): ' +
        'what the bytecode lets its owner do (mint, blacklist, pause, burn from others, change taxes, cap ' +
        'transfers, switch trading off; also behind EIP-1967, beacon and EIP-1167 proxies), the owner (renounced ' +
        'owners make those `info`, suppressed), well-known tokens, and a simulated buy, transfer and sell through ' +
        "the network's V2 router one hour apart (`eth_simulateV1` on your node): `cannot_sell`, `transfer_fee` " +
        'with the measured taxes, `no_liquidity` (docs/risk.md#erc-20-tokens). Without `chain`, a `0x…` mint ' +
        'is scanned on ethereum, a base58 one on solana. ' +
        SCORING,
      tag: 'Developer API',
      auth: 'api_key',
      body: scanBody,
      responses: {
        200: { description: 'The scan', schema: scanSchema },
        404: { description: '`not_found`: no account (Solana) or no contract code (EVM) at this address' },
        422: {
          description:
            '`not_a_mint`: the account exists but is not an SPL Token / Token-2022 mint, or the contract does ' +
            'not answer as an ERC-20',
        },
      },
      handler: async (ctx, { body }) => {
        about(ctx, body.mint, body.chain, body.network);
        const verdict = await risk.scanToken(apiKeyOf(ctx).accountId, {
          address: body.mint,
          chain: body.chain,
          network: body.network,
        });
        about(ctx, verdict.target, verdict.network.chain, verdict.network.network);
        countAnswered(impact, 'token_scans', verdict);
        metrics.answered('scan-token', verdict);
        return { body: presentTokenScan(verdict) };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/v1/approvals',
      operationId: 'listApprovals',
      summary: "A wallet's outstanding approvals (ERC-20, NFT operators, Permit2)",
      description:
        'What revoke.cash shows, from your node: every Approval, ApprovalForAll and Permit2 event naming the ' +
        "wallet as owner over `risk.evm.approvals_lookback_days` (365; turned into blocks by the network's " +
        'block time), the latest per token and spender, confirmed by current `allowance` / `isApprovedForAll` / ' +
        'Permit2 `allowance` reads in one batch: spent, revoked and expired ones are dropped. A provider that ' +
        'refuses a large `eth_getLogs` range gets it halved; a part it never answers is named in `gaps` with ' +
        '`complete: false`. `risky_approval`: an unlimited or operator approval to an EOA, an unused address or ' +
        'an unknown EIP-7702 account (high), or any approval to a sanctioned or deny-listed spender (critical). ' +
        "Cached with the wallet's risk-v2 analysis (TTL by level). EVM chains only (`400 unsupported_chain`).",
      tag: 'Developer API',
      auth: 'api_key',
      query: approvalsQuery,
      responses: {
        200: { description: 'The approvals', schema: approvalsAnswerSchema },
        400: {
          description: '`unsupported_chain`: not an EVM network (or not configured); `invalid_address`',
        },
        503: { description: '`provider_unavailable`: the approvals could not be read at all (retryable)' },
      },
      handler: async (ctx, { query }) => {
        about(ctx, query.target, query.chain, query.network);
        const verdict = await risk.walletApprovals(apiKeyOf(ctx).accountId, {
          address: query.target,
          chain: query.chain,
          network: query.network,
        });
        about(ctx, verdict.target, verdict.network.chain, verdict.network.network);
        return { body: presentApprovals(verdict) };
      },
    }),
    defineRoute({
      method: 'post',
      path: '/api/v1/shield/preflight',
      operationId: 'preflight',
      summary: 'Should this user sign, approve, send to or interact with this target — or sign this payload?',
      description:
        '`block` for a critical level, `warn` for high or medium, `allow` for low, after the intent ' +
        'adjustments (`transfer`: a never-used address is medium; `approve`: an EOA spender is ' +
        '`approval_to_eoa`) and your lists (allow-listed → `allow` unless sanctioned). Without `chain` and ' +
        '`network` the payload decides (a Solana wire transaction; `chainId`; `domain.chainId`), then the ' +
        'address format (base58 → solana/mainnet, `0x…` → ethereum/mainnet). With `from` and one payload ' +
        '(`transaction`, `typed_data` or `message`) the transaction is simulated on your node (`eth_simulateV1`, ' +
        'else `debug_traceCall`; Solana `simulateTransaction`) or the signature decoded, every counterparty ' +
        'judged by the engine, and `simulation` / `signature` are answered (docs/risk.md#before-the-user-signs); ' +
        'simulations are never cached. Body limit 256 KiB. Answers within the preflight deadline (default ' +
        '1500 ms): checks that did not finish make `complete: false` and the decision is at least the ' +
        'configured fail mode (`warn` by default), never a silent allow.',
      tag: 'Developer API',
      auth: 'api_key',
      body: preflightBody,
      responses: { 200: { description: 'The decision', schema: preflightSchema } },
      bodyLimitKb: 256,
      handler: async (ctx, { body }) => {
        // A payload preflight without a target judged the payload's counterparties, not one target of the
        // caller's: its usage record names none (the chain and network it ran on still).
        about(ctx, body.target, body.chain, body.network);
        const verdict = await risk.preflight(apiKeyOf(ctx).accountId, body);
        const target = body.target === undefined ? undefined : (verdict.target ?? body.target);
        about(ctx, target, verdict.network.chain, verdict.network.network);
        countAnswered(impact, 'preflights', verdict);
        metrics.answered('preflight', verdict);
        return { body: presentPreflight(verdict) };
      },
    }),
  ];
}
