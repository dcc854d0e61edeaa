import type { Context } from 'koa';
import { z } from 'zod';
import { AppError, type FieldError } from '../platform/errors.js';

/** Which credential a route takes (docs/api.md#credentials). */
export type AuthScheme = 'none' | 'agent' | 'jwt' | 'jwt_key_admin' | 'api_key';

export interface RouteResponse {
  description: string;
  schema?: z.ZodType;
  contentType?: string;
  headers?: Record<string, string>;
}

export type RouteResponses = Record<number, RouteResponse>;

declare const jsonOf: unique symbol;
/** JSON text serialised ahead (a hot path caches it), typed by the value it was made from. */
export type JsonText<T> = string & { readonly [jsonOf]: T };
export const jsonText = <T>(value: T): JsonText<T> => JSON.stringify(value) as JsonText<T>;

/** The JSON a response's schema describes (anything, for a response documented without a schema). */
type BodyOf<R extends RouteResponse> = R['schema'] extends z.ZodType
  ? z.input<R['schema']> | JsonText<z.input<R['schema']>>
  : unknown;

/**
 * What a handler returns: one of the route's documented responses, its body typed by that response's
 * schema (the status may be left out for 200). So a handler cannot answer what the OpenAPI does not say.
 */
export type RouteResult<R extends RouteResponses = RouteResponses> = {
  [S in keyof R & number]: (S extends 200 ? { status?: S } : { status: S }) & {
    body: BodyOf<R[S]>;
    headers?: Record<string, string>;
    contentType?: string;
  };
}[keyof R & number];

/**
 * One route: its path, credential, request schemas and responses. The same object registers the Koa
 * handler (which validates with these schemas) and writes the OpenAPI document, so the two never drift.
 */
export interface RouteSpec<
  B extends z.ZodType = z.ZodType,
  Q extends z.ZodType = z.ZodType,
  P extends z.ZodType = z.ZodType,
  R extends RouteResponses = RouteResponses,
> {
  method: 'get' | 'post' | 'patch' | 'delete';
  /** OpenAPI-style template (`/api/account/api-keys/{id}`); also the `endpoint` label in usage and metrics. */
  path: string;
  operationId: string;
  summary: string;
  description?: string;
  tag: string;
  auth: AuthScheme;
  body?: B;
  /** Larger body limit than the default, in KiB (e.g. bulk imports). */
  bodyLimitKb?: number;
  /**
   * API-key routes whose call costs more than one rate-limit point (a bulk call): the points the valid
   * body costs in all. The first is taken before the body is read, the rest once it is validated.
   */
  rateCost?: (body: z.infer<B>) => number;
  query?: Q;
  params?: P;
  responses: R;
  handler: (
    ctx: Context,
    input: { body: z.infer<B>; query: z.infer<Q>; params: z.infer<P> },
  ) => Promise<RouteResult<R>> | RouteResult<R>;
}

export function defineRoute<
  B extends z.ZodType,
  Q extends z.ZodType,
  P extends z.ZodType,
  const R extends RouteResponses,
>(spec: RouteSpec<B, Q, P, R>): RouteSpec {
  // The route list holds routes of every shape; each was checked against its own responses here.
  return spec as unknown as RouteSpec;
}

/** Zod issues → `errors[]` of the problem document, one entry per field. */
export function toFieldErrors(error: z.ZodError, base?: string): FieldError[] {
  return error.issues.map((issue) => ({
    path: [base, ...issue.path.map(String)].filter(Boolean).join('.') || '(body)',
    message: issue.message,
  }));
}

/** True when a string anywhere in the value (object keys included) holds U+0000. Iterative: deep input is fine. */
function hasNul(value: unknown): boolean {
  const stack = [value];
  while (stack.length > 0) {
    const v = stack.pop();
    if (typeof v === 'string') {
      if (v.includes('\u0000')) return true;
    } else if (typeof v === 'object' && v !== null) {
      for (const [key, child] of Object.entries(v)) {
        if (key.includes('\u0000')) return true;
        stack.push(child);
      }
    }
  }
  return false;
}

/** The top-level field holding a NUL character ('' for the value itself), or undefined when there is none. */
function nulField(value: unknown): string | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    return hasNul(value) ? '' : undefined;
  for (const [key, child] of Object.entries(value)) if (key.includes('\u0000') || hasNul(child)) return key;
  return undefined;
}

export function parseOrThrow<T extends z.ZodType>(schema: T, value: unknown, where: string): z.infer<T> {
  // PostgreSQL text cannot hold U+0000: refuse it here as bad input rather than fail later with a 500.
  const nul = nulField(value);
  if (nul !== undefined) {
    const path = [where === 'body' ? undefined : where, nul].filter(Boolean).join('.') || '(body)';
    throw new AppError('invalid_request', `The request ${where} is invalid.`, {
      errors: [{ path, message: 'must not contain NUL (U+0000) characters' }],
    });
  }
  const result = schema.safeParse(value);
  if (!result.success) {
    const errors = toFieldErrors(result.error, where === 'body' ? undefined : where);
    throw new AppError('invalid_request', `The request ${where} is invalid.`, { errors });
  }
  return result.data;
}

/** Koa path from the OpenAPI template: `{id}` → `:id`. */
/** The `limit` and `cursor` query parameters of every paginated list (answers carry `next_cursor`). */
export const pageQuery = {
  limit: z.coerce.number().int().min(1).max(1000).default(100),
  cursor: z
    .string()
    .max(500)
    .optional()
    .meta({ description: 'Opaque: the next_cursor of the previous page.' }),
};

export const koaPath = (path: string) => path.replace(/\{(\w+)\}/g, ':$1');
