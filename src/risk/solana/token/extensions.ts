import { AccountState, type Extension } from '@solana-program/token-2022';
import { isOption, unwrapOption } from '@solana/kit';
import { finding, type Evidence, type Finding } from '../../findings.js';
import { nonZero, optionalKey, ZERO_KEY } from './decode.js';
import type { MintContext, TokenExtensionView } from './types.js';

const BPS_HIGH = 100; // > 1% → high
const TEXT_FIELDS = new Set(['name', 'symbol', 'uri', 'additionalMetadata']);

export function extensionOf<K extends Extension['__kind']>(
  ctx: MintContext,
  kind: K,
): Extract<Extension, { __kind: K }> | undefined {
  return ctx.extensions.find((e): e is Extract<Extension, { __kind: K }> => e.__kind === kind);
}

/** The Token-2022 extension findings (docs/risk.md#solana-token), in a fixed order. */
export function extensionFindings(ctx: MintContext, evidence: (v: unknown) => Evidence): Finding[] {
  const out: Finding[] = [];
  const raw = (e: Extension) => extensionView(e);

  const delegate = extensionOf(ctx, 'PermanentDelegate');
  const delegateKey = delegate && nonZero(delegate.delegate);
  if (delegate && delegateKey)
    out.push(
      finding(
        'permanent_delegate',
        `${delegateKey} is a permanent delegate: it can transfer or burn tokens from any holder's account, without their signature.`,
        evidence(raw(delegate)),
      ),
    );

  const hook = extensionOf(ctx, 'TransferHook');
  if (hook) {
    const program = nonZero(hook.programId);
    const authority = nonZero(hook.authority);
    if (program || authority)
      out.push(
        finding(
          'transfer_hook',
          program
            ? `Every transfer runs program ${program}${authority ? `, which ${authority} can replace` : ''}: it can block or alter transfers.`
            : `No hook program is set now, but ${authority} can set one that runs on every transfer.`,
          evidence(raw(hook)),
        ),
      );
  }

  const fee = extensionOf(ctx, 'TransferFeeConfig');
  if (fee) {
    const older = fee.olderTransferFee.transferFeeBasisPoints;
    const newer = fee.newerTransferFee.transferFeeBasisPoints;
    const highest = Math.max(older, newer);
    const authority = nonZero(fee.transferFeeConfigAuthority);
    const pct = (bps: number) => `${(bps / 100).toFixed(2)}%`;
    if (highest > 0) {
      const schedule =
        older === newer
          ? `${pct(older)} (${older} bps)`
          : `${pct(older)} (${older} bps) before epoch ${fee.newerTransferFee.epoch}, ${pct(newer)} (${newer} bps) from then on`;
      out.push(
        finding(
          'transfer_fee',
          `Every transfer pays a fee of ${schedule}${authority ? `; ${authority} can change it` : ''}.`,
          evidence(raw(fee)),
          { severity: highest > BPS_HIGH ? 'high' : 'medium' },
        ),
      );
    } else if (authority) {
      out.push(
        finding(
          'transfer_fee',
          `Transfers pay no fee now, but ${authority} can set one (up to 100%), effective two epochs later.`,
          evidence(raw(fee)),
        ),
      );
    }
  }

  const defaultState = extensionOf(ctx, 'DefaultAccountState');
  if (defaultState?.state === AccountState.Frozen)
    out.push(
      finding(
        'default_account_state_frozen',
        'Every new token account starts frozen: holders need the freeze authority to thaw them before they can move tokens.',
        evidence(raw(defaultState)),
      ),
    );

  const nonTransferable = extensionOf(ctx, 'NonTransferable');
  if (nonTransferable)
    out.push(
      finding(
        'non_transferable',
        'The tokens are non-transferable (soul-bound): holders can never sell or send them.',
        evidence(raw(nonTransferable)),
      ),
    );

  const pausable = extensionOf(ctx, 'PausableConfig');
  if (pausable) {
    const authority = optionalKey(pausable.authority);
    if (pausable.paused || authority)
      out.push(
        finding(
          'pausable',
          pausable.paused
            ? `Transfers, mints and burns are paused now${authority ? ` (by ${authority}, who can resume them)` : ' and no authority can resume them'}.`
            : `${authority} can pause every transfer, mint and burn.`,
          evidence(raw(pausable)),
        ),
      );
  }

  const close = extensionOf(ctx, 'MintCloseAuthority');
  const closeKey = close && nonZero(close.closeAuthority);
  if (close && closeKey)
    out.push(
      finding(
        'mint_close_authority',
        `${closeKey} can close the mint once its supply is 0 (and re-create a different mint at the same address).`,
        evidence(raw(close)),
      ),
    );

  const confidential = extensionOf(ctx, 'ConfidentialTransferMint');
  if (confidential) {
    const auditor = optionalKey(confidential.auditorElgamalPubkey);
    out.push(
      finding(
        'confidential_transfers',
        `Balances and transfer amounts can be encrypted${auditor ? ', readable by the auditor key' : ' with no auditor key'}${confidential.autoApproveNewAccounts ? '; new accounts are approved automatically' : ''}.`,
        evidence(raw(confidential)),
      ),
    );
  }
  return out;
}

/** One extension as the OpenAPI `TokenScan` shows it (`token.extensions[]`); TransferFeeConfig gets the flat fields the API documents. */
export function extensionView(e: Extension): TokenExtensionView {
  if (e.__kind === 'TransferFeeConfig') {
    const fee = (f: typeof e.olderTransferFee) => ({
      epoch: f.epoch.toString(),
      fee_bps: f.transferFeeBasisPoints,
      max_fee_raw: f.maximumFee.toString(),
    });
    const older = fee(e.olderTransferFee);
    const newer = fee(e.newerTransferFee);
    const highest = older.fee_bps > newer.fee_bps ? older : newer;
    return {
      type: 'transfer_fee_config',
      fee_bps: highest.fee_bps,
      max_fee_raw: highest.max_fee_raw,
      authority: nonZero(e.transferFeeConfigAuthority),
      withdraw_withheld_authority: nonZero(e.withdrawWithheldAuthority),
      withheld_raw: e.withheldAmount.toString(),
      older_fee: older,
      newer_fee: newer,
    };
  }
  const { __kind, ...fields } = e;
  const view: TokenExtensionView = { type: snake(__kind) };
  for (const [key, value] of Object.entries(fields)) view[snake(key)] = plain(value, key);
  return view;
}

/** Codec output as JSON: Options unwrapped, u64 as strings, bytes as base64, zero keys as null. */
function plain(value: unknown, key: string): unknown {
  if (isOption(value)) return plain(unwrapOption(value), key);
  if (typeof value === 'bigint') return value.toString();
  if (typeof value === 'string') return !TEXT_FIELDS.has(key) && value === ZERO_KEY ? null : value;
  if (value instanceof Uint8Array) return Buffer.from(value).toString('base64');
  if (value instanceof Map)
    return Object.fromEntries([...(value as Map<string, unknown>)].map(([k, v]) => [k, plain(v, key)]));
  if (Array.isArray(value)) return value.map((v) => plain(v, key));
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [snake(k), plain(v, k)]));
  return value;
}

function snake(s: string): string {
  return s.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}
