import { readFileSync } from 'node:fs';
import { parse as parseYaml } from 'yaml';
import { z } from 'zod';

/*
 * The configuration machinery, knowing no setting: each part of riskwatch declares its own settings (a zod
 * schema for its section and the environment variables that override it, in its `settings.ts`), and
 * src/config.ts composes them into the one configuration this loader reads, validates and freezes.
 * The building blocks below also accept the strings environment variables hold.
 */

/** A comma-separated list in the environment, or a YAML list in the file. */
export const csv = z.preprocess(
  (v) =>
    typeof v === 'string'
      ? v
          .split(',')
          .map((s) => s.trim())
          .filter(Boolean)
      : v,
  z.array(z.string().min(1)),
);
/** A list given as JSON text in the environment, or as a YAML list in the file. */
export const jsonList = z.preprocess((v, ctx) => {
  if (typeof v !== 'string') return v;
  try {
    return JSON.parse(v) as unknown;
  } catch {
    ctx.addIssue({ code: 'custom', message: 'expected a JSON array' });
    return z.NEVER;
  }
}, z.array(z.unknown()));
export const bool = z.preprocess((v) => (v === 'true' ? true : v === 'false' ? false : v), z.boolean());
export const int = (min: number, max: number) => z.coerce.number().int().min(min).max(max);
export const cron = z.string().regex(/^\S+( \S+){4,5}$/, 'expected a cron expression of 5 or 6 fields');
/** A name in settings and URLs: `solana`, `mainnet-beta`, `default`. */
export const slug = z
  .string()
  .regex(/^[a-z0-9][a-z0-9-]*$/, 'expected lower-case letters, digits and dashes');

/** An http(s) URL to localhost, 127.0.0.0/8 or [::1]: traffic that never leaves the machine. */
export function isLoopbackUrl(url: string): boolean {
  if (!URL.canParse(url)) return false;
  const { protocol, hostname } = new URL(url);
  if (protocol !== 'http:' && protocol !== 'https:') return false;
  return hostname === 'localhost' || hostname === '[::1]' || /^127(\.\d{1,3}){3}$/.test(hostname);
}

/** Environment variable → the path of the setting it overrides (`PORT` → `server.port`). */
export type EnvVars = Readonly<Record<string, string>>;

export class ConfigError extends Error {
  constructor(readonly lines: string[]) {
    super(lines.join('\n'));
    this.name = 'ConfigError';
  }
}

function setPath(target: Record<string, unknown>, path: string, value: unknown): void {
  const parts = path.split('.');
  let node = target;
  for (const part of parts.slice(0, -1)) {
    const next = node[part];
    if (typeof next !== 'object' || next === null) node[part] = {};
    node = node[part] as Record<string, unknown>;
  }
  node[parts.at(-1)!] = value;
}

/** The variable of the setting at `path` or containing it (`auth.jwt.algorithms.0` → JWT_ALGORITHMS). */
function envNameFor(envVars: EnvVars, path: string): string | undefined {
  return Object.entries(envVars).find(([, p]) => path === p || path.startsWith(`${p}.`))?.[0];
}

function readYaml(file: string): Record<string, unknown> {
  try {
    return (parseYaml(readFileSync(file, 'utf8')) ?? {}) as Record<string, unknown>;
  } catch (err) {
    throw new ConfigError([`config: cannot read ${file}: ${(err as Error).message}`]);
  }
}

/** `over` merged into `base` key by key (objects merge, anything else replaces). */
function merge(base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> {
  const out = { ...base };
  for (const [key, value] of Object.entries(over)) {
    // A YAML `__proto__:` key would set the merged object's prototype: no setting has such a name.
    if (key === '__proto__') continue;
    const current = out[key];
    const bothObjects = [current, value].every(
      (v) => typeof v === 'object' && v !== null && !Array.isArray(v),
    );
    out[key] = bothObjects
      ? merge(current as Record<string, unknown>, value as Record<string, unknown>)
      : value;
  }
  return out;
}

export interface ConfigSource<S extends z.ZodType> {
  schema: S;
  /** The file of defaults, shipped with the code. */
  defaultsFile: string;
  envVars: EnvVars;
}

/**
 * Reads the defaults file, merges the operator's file (RISKWATCH_CONFIG) over it, applies environment
 * overrides, validates, and freezes. A bad value yields one line per problem naming the environment
 * variable (or the file path) that holds it.
 */
export function readConfig<S extends z.ZodType>(
  { schema, defaultsFile, envVars }: ConfigSource<S>,
  env: NodeJS.ProcessEnv,
): Readonly<z.infer<S>> {
  const defaults = readYaml(defaultsFile);
  const raw = env.RISKWATCH_CONFIG ? merge(defaults, readYaml(env.RISKWATCH_CONFIG)) : defaults;
  for (const [name, path] of Object.entries(envVars)) {
    const value = env[name];
    if (value !== undefined && value !== '') setPath(raw, path, value);
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    throw new ConfigError(
      parsed.error.issues.map((issue) => {
        const path = issue.path.join('.');
        const envName = envNameFor(envVars, path);
        return `config: ${envName ?? path}${envName ? ` (${path})` : ''}: ${issue.message}`;
      }),
    );
  }
  return deepFreeze(parsed.data);
}

function deepFreeze<T>(value: T): T {
  if (value && typeof value === 'object') {
    for (const child of Object.values(value)) deepFreeze(child);
    Object.freeze(value);
  }
  return value;
}
