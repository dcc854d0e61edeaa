/**
 * Domain errors: what went wrong, in the words of the API's stable `code`s, with no knowledge of HTTP.
 * The HTTP layer maps each code to a status and an RFC 9457 problem document; workers map them to
 * retry or give-up.
 */
export type ErrorCode =
  | 'invalid_request'
  | 'invalid_address'
  | 'invalid_webhook_url'
  | 'unsupported_chain'
  | 'unsupported_target_type'
  | 'unsupported_intent'
  | 'unauthorized'
  | 'entitlement_required'
  | 'browser_request_forbidden'
  | 'forbidden'
  | 'not_found'
  | 'method_not_allowed'
  | 'payload_too_large'
  | 'unsupported_media_type'
  | 'conflict'
  | 'limit_exceeded'
  | 'too_many_entries'
  | 'not_a_mint'
  | 'no_target'
  | 'rate_limited'
  | 'provider_unavailable'
  | 'dependency_unavailable'
  | 'secrets_key_missing'
  | 'internal_error';

export interface FieldError {
  path: string;
  message: string;
}

export class AppError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string,
    readonly extra: { errors?: FieldError[]; retryAfterS?: number; headers?: Record<string, string> } = {},
  ) {
    super(message);
    this.name = 'AppError';
  }
}

export const notFound = (what: string) => new AppError('not_found', `${what} was not found.`);
export const conflict = (detail: string) => new AppError('conflict', detail);
export const invalidRequest = (detail: string, errors?: FieldError[]) =>
  new AppError('invalid_request', detail, errors ? { errors } : {});
