import type { Context } from 'koa';
import type { ErrorCode, FieldError } from '../platform/errors.js';

/** Each stable error code with its HTTP status and title (docs/api.md#errors). */
export const PROBLEMS: Record<ErrorCode, { status: number; title: string }> = {
  invalid_request: { status: 400, title: 'Invalid request' },
  invalid_address: { status: 400, title: 'Invalid address' },
  invalid_webhook_url: { status: 400, title: 'Webhook URL refused' },
  unsupported_chain: { status: 400, title: 'Unsupported chain or network' },
  unsupported_target_type: { status: 400, title: 'Unsupported target type' },
  unsupported_intent: { status: 400, title: 'Unsupported intent' },
  unauthorized: { status: 401, title: 'Unauthorized' },
  entitlement_required: { status: 403, title: 'Enterprise entitlement required' },
  browser_request_forbidden: { status: 403, title: 'API keys are for server-side calls only' },
  forbidden: { status: 403, title: 'Forbidden' },
  not_found: { status: 404, title: 'Not found' },
  method_not_allowed: { status: 405, title: 'Method not allowed' },
  payload_too_large: { status: 413, title: 'Payload too large' },
  unsupported_media_type: { status: 415, title: 'Unsupported media type' },
  conflict: { status: 409, title: 'Conflict' },
  limit_exceeded: { status: 409, title: 'Account limit reached' },
  too_many_entries: { status: 400, title: 'Too many entries in one request' },
  not_a_mint: { status: 422, title: 'Not a token mint' },
  no_target: { status: 422, title: 'The call has no target' },
  rate_limited: { status: 429, title: 'Rate limit exceeded' },
  provider_unavailable: { status: 503, title: 'Node provider unavailable' },
  dependency_unavailable: { status: 503, title: 'Service dependency unavailable' },
  secrets_key_missing: { status: 503, title: 'Webhook secrets key not configured' },
  internal_error: { status: 500, title: 'Internal error' },
};

export const PROBLEM_TYPE_BASE = 'https://riskwatch.dev/errors/';

export interface ProblemBody {
  type: string;
  title: string;
  status: number;
  code: ErrorCode;
  detail: string;
  request_id: string;
  retryable?: boolean;
  errors?: FieldError[];
}

/**
 * The problem document of `code`. `status` is given only where HTTP dictates another than the code's own
 * (431 for headers too large, answered outside Koa).
 */
export function problemBody(
  code: ErrorCode,
  detail: string,
  requestId: string,
  { status = PROBLEMS[code].status, errors }: { status?: number; errors?: FieldError[] } = {},
): ProblemBody {
  const body: ProblemBody = {
    type: PROBLEM_TYPE_BASE + code,
    title: PROBLEMS[code].title,
    status,
    code,
    detail,
    request_id: requestId,
  };
  if (status === 503) body.retryable = true;
  if (errors?.length) body.errors = errors;
  return body;
}

export function writeProblem(ctx: Context, code: ErrorCode, detail: string, errors?: FieldError[]): void {
  const body = problemBody(code, detail, String(ctx.state.requestId ?? ''), { errors });
  ctx.status = body.status;
  ctx.body = body;
  ctx.type = 'application/problem+json';
}
