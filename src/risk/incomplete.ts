import { RpcError } from '../chains/jsonrpc.js';
import { AppError } from '../platform/errors.js';
import { finding, type Finding } from './findings.js';

/**
 * `check_incomplete` (info) for a sub-check that did not finish: names the RPC method and the check, on
 * every chain. `reason` is why:
 * - a provider failure (AppError) or a node error answer (RpcError): its code and message go to
 *   `evidence.value.error`;
 * - the analyzer's own explanation (a string, e.g. an account that does not decode): `evidence.value.reason`,
 *   and the detail says the check did not finish (no provider was at fault);
 * - undefined: nothing more is known.
 * Anything else is a bug and is rethrown rather than reported as an unfinished check.
 */
export function incompleteFinding(
  method: string,
  check: string,
  reason: unknown,
  slot: number | undefined,
  value: Record<string, unknown> = {},
): Finding {
  if (typeof reason === 'string') {
    return finding('check_incomplete', `${check} did not finish: ${reason}`, {
      method,
      slot,
      value: { ...value, reason },
    });
  }
  const error = describeFailure(reason);
  return finding('check_incomplete', detail(method, check, error?.message.replace(/\.$/, '')), {
    method,
    slot,
    value: { ...value, ...(error ? { error } : {}) },
  });
}

function detail(method: string, check: string, why: string | undefined): string {
  return `${method} did not answer for ${check}${why ? `: ${why}` : ''}. Unknown is not "no risk": this check counts as not done.`;
}

function describeFailure(reason: unknown): { code: string | number; message: string } | undefined {
  if (reason === undefined) return undefined;
  if (reason instanceof AppError) return { code: reason.code, message: reason.message };
  if (reason instanceof RpcError) return { code: reason.code, message: reason.rpcMessage };
  throw reason instanceof Error ? reason : new Error('unexpected failure', { cause: reason });
}
