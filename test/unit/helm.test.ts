import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_CONFIG_FILE, ENV_VARS } from '../../src/config.js';
import { JobQueues } from '../../src/jobs/queues.js';
import { createRedis } from '../../src/platform/redis.js';
import { ChartRender, SECRETS_KEY } from '../support/chart-render.js';

const APP_SHUTDOWN_TIMEOUT_S = 10; // RISKWATCH_SHUTDOWN_TIMEOUT_MS default, config/riskwatch.yaml

interface EnvVar {
  name: string;
  value?: string;
  valueFrom?: { secretKeyRef?: { name: string; key: string; optional?: boolean } };
}
interface Probe {
  httpGet?: { path: string; port: string | number };
}
interface Container {
  name: string;
  image: string;
  args?: string[];
  command?: string[];
  securityContext?: Record<string, unknown>;
  env?: EnvVar[];
  envFrom?: { configMapRef?: { name: string }; secretRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  startupProbe?: Probe;
  livenessProbe?: Probe;
  readinessProbe?: Probe;
  lifecycle?: { preStop?: { exec?: { command: string[] } } };
  volumeMounts?: { name: string; mountPath: string }[];
}
interface PodSpec {
  containers: Container[];
  serviceAccountName?: string;
  automountServiceAccountToken?: boolean;
  securityContext?: Record<string, unknown>;
  terminationGracePeriodSeconds?: number;
  volumes?: { name: string; emptyDir?: object }[];
}
interface Manifest {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string>; annotations?: Record<string, string> };
  data?: Record<string, string>;
  spec?: {
    replicas?: number;
    type?: string;
    clusterIP?: string;
    ports?: { name: string; port: number; targetPort: string | number }[];
    selector?: Record<string, unknown>;
    template?: {
      metadata?: { annotations?: Record<string, string>; labels?: Record<string, string> };
      spec: PodSpec;
    };
  };
}

const chart = new ChartRender();
const run = (args: string[]) => chart.run(args);
const render = (...args: string[]) => chart.render<Manifest>(...args);

function valuesFile(name: string, values: unknown): string {
  const file = join(chart.workDir, `${name}.yaml`);
  writeFileSync(file, stringify(values));
  return file;
}

const find = (manifests: Manifest[], kind: string, name: string): Manifest => {
  const found = manifests.find((m) => m.kind === kind && m.metadata.name === name);
  if (!found)
    throw new Error(
      `no ${kind} ${name} in: ${manifests.map((m) => `${m.kind}/${m.metadata.name}`).join(', ')}`,
    );
  return found;
};
const podSpec = (m: Manifest): PodSpec => {
  const spec = m.spec?.template?.spec;
  if (!spec) throw new Error(`${m.kind} ${m.metadata.name} has no pod template`);
  return spec;
};
const workloads = (manifests: Manifest[]) =>
  manifests.filter((m) => m.kind === 'Deployment' || m.kind === 'Job');
const onlyContainer = (m: Manifest): Container => {
  const [container, ...rest] = podSpec(m).containers;
  expect(rest).toEqual([]);
  return container!;
};

/**
 * The RPC URL variable of every built-in network (RISKWATCH_RPC_SOLANA_MAINNET) and its key under
 * secrets.rpcUrls (solanaMainnet).
 */
const RPC_URL_VARS = Object.entries(ENV_VARS).flatMap(([name, path]) => {
  const match = /^chains\.networks\.([a-z0-9-]+)\.([a-z0-9-]+)\.rpc_urls$/.exec(path);
  if (!match) return [];
  const key = `${match[1]}-${match[2]}`.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());
  return [{ name, key }];
});
/** The optional secretKeyRef of every RPC URL variable, each key named by `keyOf`. */
const rpcRefs = (secretName: string, keyOf: (name: string) => string = (name) => name) =>
  Object.fromEntries(
    RPC_URL_VARS.map(({ name }) => [name, { name: secretName, key: keyOf(name), optional: true }]),
  );
const decode = (data: Record<string, string> = {}) =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v, 'base64').toString()]));

const SECRET_VALUES = [
  '--set-string',
  'secrets.databaseUrl=postgres://rw:pw@db.internal:5432/riskwatch,secrets.redisUrl=redis://redis.internal:6379',
  '--set-string',
  'secrets.jwtSecret=0123456789abcdef0123456789abcdef',
];

beforeAll(() => chart.build('rw-helm-'), 180_000);

afterAll(() => chart.cleanup());

describe('helm/riskwatch', () => {
  it('renders valid Kubernetes YAML with the default values', () => {
    const manifests = render();
    expect(manifests.map((m) => `${m.kind}/${m.metadata.name}`).sort()).toEqual(
      [
        'ConfigMap/rw-riskwatch',
        'ConfigMap/rw-riskwatch-migrate',
        'Deployment/rw-riskwatch-api',
        'Deployment/rw-riskwatch-scheduler',
        'Deployment/rw-riskwatch-worker',
        'Job/rw-riskwatch-migrate',
        'PodDisruptionBudget/rw-riskwatch-api',
        'Secret/rw-riskwatch',
        'Secret/rw-riskwatch-migrate',
        'Service/rw-riskwatch-api',
        'Service/rw-riskwatch-metrics',
        'ServiceAccount/rw-riskwatch',
        'ServiceAccount/rw-riskwatch-migrate',
      ].sort(),
    );
  });

  it('locks down every pod and container', () => {
    const manifests = render();
    expect(workloads(manifests)).toHaveLength(4);
    for (const workload of workloads(manifests)) {
      const pod = podSpec(workload);
      expect(pod.automountServiceAccountToken, workload.metadata.name).toBe(false);
      expect(pod.serviceAccountName).toMatch(/^rw-riskwatch/);
      expect(pod.securityContext).toMatchObject({
        runAsNonRoot: true,
        runAsUser: 1000,
        seccompProfile: { type: 'RuntimeDefault' },
      });
      // Long-running roles drain on SIGTERM: the grace period covers the app's deadline plus the preStop sleep.
      if (workload.kind === 'Deployment')
        expect(pod.terminationGracePeriodSeconds).toBeGreaterThan(APP_SHUTDOWN_TIMEOUT_S + 5);
      expect(pod.volumes).toContainEqual(
        expect.objectContaining({ name: 'tmp', emptyDir: expect.any(Object) as object }),
      );
      for (const container of pod.containers) {
        expect(container.securityContext, `${workload.metadata.name}/${container.name}`).toMatchObject({
          runAsNonRoot: true,
          runAsUser: 1000,
          readOnlyRootFilesystem: true,
          allowPrivilegeEscalation: false,
          capabilities: { drop: ['ALL'] },
          seccompProfile: { type: 'RuntimeDefault' },
        });
        expect(container.volumeMounts).toContainEqual({ name: 'tmp', mountPath: '/tmp' });
      }
    }
    for (const account of manifests.filter((m) => m.kind === 'ServiceAccount'))
      expect(
        (account as Manifest & { automountServiceAccountToken?: boolean }).automountServiceAccountToken,
      ).toBe(false);
  });

  it('runs every role from the same image, the role being the argument to its entrypoint', () => {
    for (const overrides of [[], ['--set', 'image.repository=registry.internal/rw,image.tag=1.2.3']]) {
      const manifests = render(...overrides);
      const images = new Set(workloads(manifests).map((w) => onlyContainer(w).image));
      expect(images.size).toBe(1);
      for (const role of ['api', 'worker', 'scheduler']) {
        const container = onlyContainer(find(manifests, 'Deployment', `rw-riskwatch-${role}`));
        expect(container.args).toEqual([role]);
        expect(container.command).toBeUndefined(); // keeps tini as PID 1
      }
      expect(onlyContainer(find(manifests, 'Job', 'rw-riskwatch-migrate')).args).toEqual(['migrate']);
    }
    const digest = `sha256:${'a'.repeat(64)}`;
    const pinned = render('--set', `image.digest=${digest}`);
    for (const w of workloads(pinned)) expect(onlyContainer(w).image).toBe(`riskwatch@${digest}`);
    expect(onlyContainer(find(render(), 'Deployment', 'rw-riskwatch-api')).image).toBe('riskwatch:0.1.0');
  });

  it('runs the migration as a pre-install/pre-upgrade hook, with its own hook-time Secret and ConfigMap', () => {
    const manifests = render(...SECRET_VALUES);
    const job = find(manifests, 'Job', 'rw-riskwatch-migrate');
    expect(job.metadata.annotations).toMatchObject({
      'helm.sh/hook': 'pre-install,pre-upgrade',
      'helm.sh/hook-delete-policy': 'before-hook-creation',
    });
    const weight = (m: Manifest) => Number(m.metadata.annotations?.['helm.sh/hook-weight'] ?? 0);
    // On a first install the release's own Secret/ConfigMap/ServiceAccount do not exist yet when hooks run.
    const pod = podSpec(job);
    const container = onlyContainer(job);
    const configMap = find(manifests, 'ConfigMap', container.envFrom?.[0]?.configMapRef?.name ?? '');
    const secret = find(
      manifests,
      'Secret',
      container.env?.find((e) => e.name === 'DATABASE_URL')?.valueFrom?.secretKeyRef?.name ?? '',
    );
    const account = find(manifests, 'ServiceAccount', pod.serviceAccountName ?? '');
    for (const needed of [configMap, secret, account]) {
      expect(needed.metadata.annotations?.['helm.sh/hook']).toBe('pre-install,pre-upgrade');
      expect(weight(needed)).toBeLessThan(weight(job));
    }
    expect(secret.data).toEqual(find(manifests, 'Secret', 'rw-riskwatch').data);
    expect(configMap.data).toEqual(find(manifests, 'ConfigMap', 'rw-riskwatch').data);
    expect(render('--set', 'migrate.enabled=false').some((m) => m.kind === 'Job')).toBe(false);
  });

  it('probes the API on /healthz (startup, liveness) and /readyz (readiness), and the other roles on /metrics', () => {
    const manifests = render();
    const api = onlyContainer(find(manifests, 'Deployment', 'rw-riskwatch-api'));
    expect(api.ports).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: 'http', containerPort: 8080 }),
        expect.objectContaining({ name: 'metrics', containerPort: 9464 }),
      ]),
    );
    expect(api.readinessProbe?.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(api.livenessProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(api.startupProbe?.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(api.lifecycle?.preStop?.exec?.command).toEqual(['sleep', '5']);
    for (const role of ['worker', 'scheduler']) {
      const container = onlyContainer(find(manifests, 'Deployment', `rw-riskwatch-${role}`));
      expect(container.ports).toEqual([expect.objectContaining({ name: 'metrics', containerPort: 9464 })]);
      expect(container.livenessProbe?.httpGet).toEqual({ path: '/metrics', port: 'metrics' });
      expect(container.startupProbe?.httpGet).toEqual({ path: '/metrics', port: 'metrics' });
    }
  });

  it('keeps /metrics off the API Service, on a headless Service of its own', () => {
    const manifests = render();
    const api = find(manifests, 'Service', 'rw-riskwatch-api');
    expect(api.spec?.ports).toEqual([
      expect.objectContaining({ name: 'http', port: 8080, targetPort: 'http' }),
    ]);
    expect(api.spec?.selector).toMatchObject({ 'app.kubernetes.io/component': 'api' });
    const metrics = find(manifests, 'Service', 'rw-riskwatch-metrics');
    expect(metrics.spec).toMatchObject({
      clusterIP: 'None',
      ports: [{ name: 'metrics', port: 9464, targetPort: 'metrics' }],
    });
    expect(metrics.spec?.selector).not.toHaveProperty(['app.kubernetes.io/component']);
  });

  it('takes DATABASE_URL, REDIS_URL, AGENT_KEYS, JWT_SECRET and the secrets keys from the chart-created Secret', () => {
    const agentKeys = valuesFile('agent-keys', { secrets: { agentKeys: ['a'.repeat(24), 'b'.repeat(24)] } });
    const manifests = render(...SECRET_VALUES, '-f', agentKeys);
    const secret = find(manifests, 'Secret', 'rw-riskwatch');
    expect(decode(secret.data)).toEqual({
      DATABASE_URL: 'postgres://rw:pw@db.internal:5432/riskwatch',
      REDIS_URL: 'redis://redis.internal:6379',
      AGENT_KEYS: `${'a'.repeat(24)},${'b'.repeat(24)}`,
      JWT_SECRET: '0123456789abcdef0123456789abcdef',
      RISKWATCH_SECRETS_KEY: SECRETS_KEY,
    });
    const configMap = find(manifests, 'ConfigMap', 'rw-riskwatch');
    for (const name of [
      'DATABASE_URL',
      'REDIS_URL',
      'AGENT_KEYS',
      'JWT_SECRET',
      'RISKWATCH_SECRETS_KEY',
      'RISKWATCH_SECRETS_PREVIOUS_KEYS',
    ])
      expect(configMap.data, `${name} must not be in the ConfigMap`).not.toHaveProperty([name]);
    for (const role of ['api', 'worker', 'scheduler']) {
      const container = onlyContainer(find(manifests, 'Deployment', `rw-riskwatch-${role}`));
      expect(container.envFrom).toContainEqual({ configMapRef: { name: 'rw-riskwatch' } });
      const refs = Object.fromEntries((container.env ?? []).map((e) => [e.name, e.valueFrom?.secretKeyRef]));
      expect(refs).toEqual({
        DATABASE_URL: { name: 'rw-riskwatch', key: 'DATABASE_URL', optional: false },
        REDIS_URL: { name: 'rw-riskwatch', key: 'REDIS_URL', optional: false },
        AGENT_KEYS: { name: 'rw-riskwatch', key: 'AGENT_KEYS', optional: true },
        JWT_SECRET: { name: 'rw-riskwatch', key: 'JWT_SECRET', optional: true },
        RISKWATCH_SECRETS_KEY: { name: 'rw-riskwatch', key: 'RISKWATCH_SECRETS_KEY', optional: false },
        RISKWATCH_SECRETS_PREVIOUS_KEYS: {
          name: 'rw-riskwatch',
          key: 'RISKWATCH_SECRETS_PREVIOUS_KEYS',
          optional: true,
        },
        ...rpcRefs('rw-riskwatch'),
      });
    }
  });

  it('puts node provider URLs in the Secret only, and leaves a network without URLs unconfigured', () => {
    expect(RPC_URL_VARS).toHaveLength(10);
    const apiKey = 'k3y-0f-the-pr0vider';
    const file = valuesFile('rpc-urls', {
      secrets: {
        rpcUrls: {
          solanaMainnet: [
            `https://mainnet.helius-rpc.com/?api-key=${apiKey}`,
            'https://api.mainnet-beta.solana.com',
          ],
          baseMainnet: [`https://base-mainnet.g.alchemy.com/v2/${apiKey}`],
        },
      },
    });
    const args = [...SECRET_VALUES, '-f', file];
    const manifests = render(...args);
    expect(run(args).stdout).not.toContain(apiKey); // base64 in the Secrets, nowhere in plain text
    for (const name of ['rw-riskwatch', 'rw-riskwatch-migrate']) {
      const decoded = decode(find(manifests, 'Secret', name).data);
      expect(decoded).toMatchObject({
        RISKWATCH_RPC_SOLANA_MAINNET: `https://mainnet.helius-rpc.com/?api-key=${apiKey},https://api.mainnet-beta.solana.com`,
        RISKWATCH_RPC_BASE_MAINNET: `https://base-mainnet.g.alchemy.com/v2/${apiKey}`,
      });
      // Networks without URLs get no key: their optional reference leaves the variable unset.
      expect(
        Object.keys(decoded)
          .filter((k) => k.startsWith('RISKWATCH_RPC_'))
          .sort(),
      ).toEqual(['RISKWATCH_RPC_BASE_MAINNET', 'RISKWATCH_RPC_SOLANA_MAINNET']);
      const configMap = find(manifests, 'ConfigMap', name).data ?? {};
      for (const { name: env } of RPC_URL_VARS) expect(configMap).not.toHaveProperty([env]);
    }
    for (const workload of workloads(manifests)) {
      const refs = Object.fromEntries(
        (onlyContainer(workload).env ?? []).map((e) => [e.name, e.valueFrom?.secretKeyRef]),
      );
      const secretName = workload.kind === 'Job' ? 'rw-riskwatch-migrate' : 'rw-riskwatch';
      expect(refs).toMatchObject(rpcRefs(secretName));
    }
    expect(
      find(render(...SECRET_VALUES), 'Secret', 'rw-riskwatch').data,
      'no URLs, no RISKWATCH_RPC_ keys',
    ).not.toHaveProperty(['RISKWATCH_RPC_SOLANA_MAINNET']);
  });

  it("puts the node provider tuning in the ConfigMap, defaulting to the service's own defaults", () => {
    const { defaults } = (
      parse(readFileSync(DEFAULT_CONFIG_FILE, 'utf8')) as { chains: { defaults: Record<string, number> } }
    ).chains;
    const expected = Object.fromEntries(
      Object.entries(ENV_VARS)
        .filter(([, path]) => path.startsWith('chains.defaults.'))
        .map(([name, path]) => [name, String(defaults[path.slice('chains.defaults.'.length)])]),
    );
    expect(Object.keys(expected)).toHaveLength(14);
    expect(find(render(), 'ConfigMap', 'rw-riskwatch').data).toMatchObject(expected);
    const tuned = find(
      render(
        '--set',
        'config.rpc.ratePerS=0,config.rpc.circuitCooldownMinMs=50,config.rpc.circuitCooldownMs=3600000',
        '--set',
        'config.rpc.maxResponseMib=1024,config.rpc.maxBufferedMib=2048,config.rpc.retryAfterMaxMs=0',
      ),
      'ConfigMap',
      'rw-riskwatch',
    ).data;
    expect(tuned).toMatchObject({
      RISKWATCH_RPC_RATE_PER_S: '0',
      RISKWATCH_RPC_CIRCUIT_COOLDOWN_MIN_MS: '50',
      RISKWATCH_RPC_CIRCUIT_COOLDOWN_MS: '3600000',
      RISKWATCH_RPC_MAX_RESPONSE_MIB: '1024',
      RISKWATCH_RPC_MAX_BUFFERED_MIB: '2048',
      RISKWATCH_RPC_RETRY_AFTER_MAX_MS: '0',
    });
  });

  it("defaults every setting of the ConfigMap to the service's own default, and sets the account limits", () => {
    const defaults = parse(readFileSync(DEFAULT_CONFIG_FILE, 'utf8')) as Record<string, unknown>;
    const at = (path: string) =>
      path.split('.').reduce<unknown>((node, key) => (node as Record<string, unknown>)[key], defaults);
    // As the environment spells it (config/README.md): lists of objects are JSON, the others comma-separated.
    const JSON_LISTS = [
      'RISKWATCH_KNOWN_WALLET_IMPLEMENTATIONS',
      'RISKWATCH_EVM_ROUTERS',
      'RISKWATCH_EVM_KNOWN_TOKENS',
    ];
    const asEnv = (name: string, value: unknown) =>
      JSON_LISTS.includes(name)
        ? JSON.stringify(value)
        : Array.isArray(value)
          ? value.join(',')
          : String(value);
    const configMap = find(render(), 'ConfigMap', 'rw-riskwatch').data ?? {};
    const checked = Object.entries(ENV_VARS).filter(([name]) => name in configMap);
    expect(checked.length).toBeGreaterThan(40);
    expect(Object.fromEntries(checked.map(([name]) => [name, configMap[name]]))).toEqual(
      Object.fromEntries(checked.map(([name, path]) => [name, asEnv(name, at(path))])),
    );
    const set = find(
      render(
        '--set',
        'config.unknownKeyCacheMs=0,config.maxApiKeysPerAccount=100000,config.maxListEntriesPerAccount=10000000',
        '--set',
        'config.jwt.jwksRefreshS=86400,config.jwt.jwksMinRefreshS=1,config.jwt.maxAgeS=3600',
      ),
      'ConfigMap',
      'rw-riskwatch',
    ).data;
    expect(set).toMatchObject({
      RISKWATCH_UNKNOWN_KEY_CACHE_MS: '0',
      RISKWATCH_MAX_API_KEYS_PER_ACCOUNT: '100000',
      RISKWATCH_MAX_LIST_ENTRIES_PER_ACCOUNT: '10000000',
      JWT_JWKS_REFRESH_S: '86400',
      JWT_JWKS_MIN_REFRESH_S: '1',
      JWT_MAX_AGE_S: '3600',
    });
  });

  it('uses an existing Secret by name and keys, and then creates none', () => {
    const file = valuesFile('existing-secret', {
      secrets: {
        existingSecret: 'corp-riskwatch',
        existingSecretKeys: {
          databaseUrl: 'pg',
          redisUrl: 'redis',
          agentKeys: 'agents',
          jwtSecret: 'jwt',
          secretsKey: 'webhook-key',
          rpcUrls: { solanaMainnet: 'solana-rpc' }, // the other networks keep their default keys
        },
      },
    });
    // The key is the existing Secret's to hold: the chart renders without secrets.secretsKey.
    const manifests = render('-f', file, '--set-string', 'secrets.secretsKey=');
    expect(manifests.filter((m) => m.kind === 'Secret')).toEqual([]);
    for (const workload of workloads(manifests)) {
      const refs = Object.fromEntries(
        (onlyContainer(workload).env ?? []).map((e) => [e.name, e.valueFrom?.secretKeyRef]),
      );
      expect(refs).toEqual({
        DATABASE_URL: { name: 'corp-riskwatch', key: 'pg', optional: false },
        REDIS_URL: { name: 'corp-riskwatch', key: 'redis', optional: false },
        AGENT_KEYS: { name: 'corp-riskwatch', key: 'agents', optional: true },
        JWT_SECRET: { name: 'corp-riskwatch', key: 'jwt', optional: true },
        RISKWATCH_SECRETS_KEY: { name: 'corp-riskwatch', key: 'webhook-key', optional: false },
        RISKWATCH_SECRETS_PREVIOUS_KEYS: {
          name: 'corp-riskwatch',
          key: 'RISKWATCH_SECRETS_PREVIOUS_KEYS',
          optional: true,
        },
        ...rpcRefs('corp-riskwatch', (name) =>
          name === 'RISKWATCH_RPC_SOLANA_MAINNET' ? 'solana-rpc' : name,
        ),
      });
    }
  });

  it('sets every environment variable of src/config.ts, through the ConfigMap or the Secret', () => {
    const everySecret = valuesFile('every-secret', {
      secrets: {
        agentKeys: ['c'.repeat(24)],
        secretsPreviousKeys: ['d'.repeat(64)],
        rpcUrls: Object.fromEntries(RPC_URL_VARS.map(({ key }) => [key, [`https://${key}.rpc.example/`]])),
      },
    });
    const manifests = render(...SECRET_VALUES, '-f', everySecret);
    const configMap = find(manifests, 'ConfigMap', 'rw-riskwatch').data ?? {};
    const secret = find(manifests, 'Secret', 'rw-riskwatch').data ?? {};
    const envNames = Object.keys(ENV_VARS);
    const covered = new Set([...Object.keys(configMap), ...Object.keys(secret)]);
    expect(envNames.filter((name) => !covered.has(name))).toEqual([]);
    expect(configMap).toMatchObject({ PORT: '8080', METRICS_PORT: '9464', LOG_LEVEL: 'info' });
  });

  it('refuses to render without the key of the webhook secrets, and takes old keys for a rotation', () => {
    const { status, stdout, stderr } = run([...SECRET_VALUES, '--set-string', 'secrets.secretsKey=']);
    expect(status).toBe(1);
    expect(stdout).toBe('');
    expect(stderr).toMatch(/secrets\.secretsKey is required.*openssl rand -hex 32.*secrets\.existingSecret/);
    // A key of the wrong shape is refused by the schema, which does not repeat it.
    const typo = 'not-a-key-but-someones-password';
    const bad = run(['--set-string', `secrets.secretsKey=${typo}`]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/secrets\.secretsKey/);
    expect(bad.stderr).not.toContain(typo);
    const base64Key = Buffer.alloc(32, 7).toString('base64');
    const rotating = valuesFile('rotating-key', {
      secrets: { secretsPreviousKeys: ['e'.repeat(64), 'f'.repeat(64)] },
    });
    const args = [...SECRET_VALUES, '-f', rotating, '--set-string', `secrets.secretsKey=${base64Key}`];
    expect(run(args).stdout).not.toContain('e'.repeat(64)); // base64 in the Secrets, nowhere in plain text
    for (const name of ['rw-riskwatch', 'rw-riskwatch-migrate'])
      expect(decode(find(render(...args), 'Secret', name).data)).toMatchObject({
        RISKWATCH_SECRETS_KEY: base64Key,
        RISKWATCH_SECRETS_PREVIOUS_KEYS: `${'e'.repeat(64)},${'f'.repeat(64)}`,
      });
    const badOld = valuesFile('bad-old-key', { secrets: { secretsPreviousKeys: ['short'] } });
    expect(run(['-f', badOld]).stderr).toMatch(/secrets\.secretsPreviousKeys/);
  });

  it('rolls the pods when the configuration or the Secret changes', () => {
    const checksums = (...args: string[]) =>
      find(render(...args), 'Deployment', 'rw-riskwatch-worker').spec?.template?.metadata?.annotations;
    const base = checksums(...SECRET_VALUES);
    expect(base?.['checksum/config']).toMatch(/^[a-f0-9]{64}$/);
    expect(checksums(...SECRET_VALUES, '--set', 'logLevel=debug')?.['checksum/config']).not.toBe(
      base?.['checksum/config'],
    );
    expect(
      checksums(...SECRET_VALUES, '--set-string', 'secrets.redisUrl=redis://other:6379')?.['checksum/secret'],
    ).not.toBe(base?.['checksum/secret']);
  });

  it('renders the optional Ingress, HPA and ServiceMonitor when asked (the last only where the CRD exists)', () => {
    const on = [
      '--set',
      'ingress.enabled=true,api.autoscaling.enabled=true,metrics.serviceMonitor.enabled=true',
    ];
    const without = render(...on);
    expect(find(without, 'Ingress', 'rw-riskwatch')).toBeTruthy();
    expect(find(without, 'HorizontalPodAutoscaler', 'rw-riskwatch-api')).toBeTruthy();
    expect(find(without, 'Deployment', 'rw-riskwatch-api').spec?.replicas).toBeUndefined(); // the HPA owns it
    expect(without.some((m) => m.kind === 'ServiceMonitor')).toBe(false);
    const withCrd = render(...on, '-a', 'monitoring.coreos.com/v1');
    expect(find(withCrd, 'ServiceMonitor', 'rw-riskwatch').spec).toMatchObject({
      selector: { matchLabels: { 'app.kubernetes.io/component': 'metrics' } },
      endpoints: [{ port: 'metrics', path: '/metrics' }],
    });
  });

  it('rejects bad values with a message naming them', () => {
    const rejected = (args: string[], message: RegExp) => {
      const { status, stdout, stderr } = run(args);
      expect(status, args.join(' ')).toBe(1);
      expect(stdout).toBe('');
      expect(stderr).toMatch(message);
    };
    rejected(['--set', 'logLevel=loud'], /logLevel/);
    rejected(['--set', 'image.repository='], /image\.repository/);
    rejected(['--set', 'api.replicaCount=two'], /api\.replicaCount/);
    rejected(['--set', 'config.jwt.algorithms=none'], /config\.jwt\.algorithms/);
    rejected(['--set', 'config.jwt.algorithms=HS256\\,RS256'], /config\.jwt\.algorithms/); // one family only
    rejected(['--set-string', 'secrets.databaseUrl=mysql://db/rw'], /secrets\.databaseUrl/);
    rejected(['--set', 'config.rpc.concurrency=0'], /config\.rpc\.concurrency/);
    rejected(['--set', 'config.rpc.retries=null'], /config\.rpc.*retries/); // a nulled default would render "0"
    rejected(['--set', 'config.rpc.maxResponseMib=2048'], /config\.rpc\.maxResponseMib/);
    rejected(['--set', 'config.rpc.circuitCooldownMinMs=10'], /config\.rpc\.circuitCooldownMinMs/);
    rejected(['--set', 'config.jwt.jwksRefreshS=5'], /config\.jwt\.jwksRefreshS/);
    rejected(['--set', 'config.jwt.maxAgeS=null'], /config\.jwt.*maxAgeS/);
    rejected(['--set', 'config.maxApiKeysPerAccount=0'], /config\.maxApiKeysPerAccount/);
    rejected(['--set', 'config.maxListEntriesPerAccount=10000001'], /config\.maxListEntriesPerAccount/);
    const badRpc = (name: string, rpcUrls: object) => ['-f', valuesFile(name, { secrets: { rpcUrls } })];
    rejected(badRpc('rpc-wss', { solanaMainnet: ['wss://ws.example'] }), /secrets\.rpcUrls\.solanaMainnet/);
    rejected(
      badRpc('rpc-comma', { bscMainnet: ['https://a.example,https://b.example'] }),
      /secrets\.rpcUrls\.bscMainnet/,
    );
    rejected(badRpc('rpc-network', { solana: ['https://a.example'] }), /secrets\.rpcUrls/); // not a network key
    rejected(
      ['--set', 'config.rpc.backoffBaseMs=5000'],
      /config\.rpc\.backoffMaxMs \(2000\) must be at least config\.rpc\.backoffBaseMs \(5000\)/,
    );
    rejected(['--set', 'replicaCount=3'], /replicaCount/); // unknown top-level key: a typo
    rejected(
      ['--set', 'terminationGracePeriodSeconds=12'],
      /terminationGracePeriodSeconds \(12\) must exceed/,
    );
  });
});

interface NetworkPolicyPort {
  port?: number | string;
  protocol?: string;
}
interface NetworkPolicyRule {
  ports?: NetworkPolicyPort[];
  from?: Record<string, unknown>[];
  to?: Record<string, unknown>[];
}
interface NetworkPolicySpec {
  podSelector: { matchLabels: Record<string, string> };
  policyTypes: string[];
  ingress?: NetworkPolicyRule[];
  egress?: NetworkPolicyRule[] | null;
}
interface ScaledObjectSpec {
  scaleTargetRef: { apiVersion: string; kind: string; name: string };
  pollingInterval: number;
  cooldownPeriod: number;
  minReplicaCount: number;
  maxReplicaCount: number;
  triggers: { type: string; metadata: Record<string, string>; authenticationRef?: { name: string } }[];
}

const ROLES = ['api', 'worker', 'scheduler', 'migrate'] as const;
const workloadOf = (manifests: Manifest[], role: string) =>
  role === 'migrate'
    ? find(manifests, 'Job', 'rw-riskwatch-migrate')
    : find(manifests, 'Deployment', `rw-riskwatch-${role}`);
const envOf = (manifests: Manifest[], role: string) => onlyContainer(workloadOf(manifests, role)).env ?? [];
const valueOf = (manifests: Manifest[], role: string, name: string) =>
  envOf(manifests, role).find((e) => e.name === name)?.value;
const policy = (manifests: Manifest[], role: string) =>
  find(manifests, 'NetworkPolicy', `rw-riskwatch-${role}`).spec as unknown as NetworkPolicySpec;
const scaledObject = (manifests: Manifest[]) =>
  find(manifests, 'ScaledObject', 'rw-riskwatch-worker').spec as unknown as ScaledObjectSpec;
const tcp = (...ports: number[]) => ports.map((port) => ({ port, protocol: 'TCP' }));
const cidr = (block: string) => ({ ipBlock: { cidr: block } });
const KUBE_DNS = {
  namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'kube-system' } },
  podSelector: { matchLabels: { 'k8s-app': 'kube-dns' } },
};
const DNS_RULE = {
  ports: [
    { port: 53, protocol: 'UDP' },
    { port: 53, protocol: 'TCP' },
  ],
  to: [KUBE_DNS],
};

/**
 * The BullMQ key of the watchlist-chunk wait list under `prefix`, as src/jobs/queues.ts names it for a
 * connection to one Redis or (`cluster`) to a Redis Cluster. Nothing is connected to.
 */
async function chunkWaitKey(prefix: string, cluster = false): Promise<string> {
  const client = createRedis(
    { url: 'redis://127.0.0.1:1', cluster_nodes: cluster ? ['127.0.0.1:1'] : [] },
    { lazyConnect: true },
  );
  const queues = new JobQueues(client, prefix);
  try {
    return queues.queue('watchlist-chunk').keys.wait!;
  } finally {
    await queues.close();
    client.disconnect();
  }
}

describe('helm/riskwatch: memory, NetworkPolicy and KEDA', () => {
  it('gives each role a memory limit and a heap sized from it (NODE_OPTIONS), none when heapPercent is 0 or null', () => {
    const manifests = render();
    const limits = Object.fromEntries(
      ROLES.map((role) => [
        role,
        (
          onlyContainer(workloadOf(manifests, role)) as Container & {
            resources?: { limits?: { memory?: string } };
          }
        ).resources?.limits?.memory,
      ]),
    );
    expect(limits).toEqual({ api: '512Mi', worker: '512Mi', scheduler: '256Mi', migrate: '256Mi' });
    expect(Object.fromEntries(ROLES.map((role) => [role, valueOf(manifests, role, 'NODE_OPTIONS')]))).toEqual(
      {
        api: '--max-old-space-size-percentage=60',
        worker: '--max-old-space-size-percentage=75',
        scheduler: '--max-old-space-size-percentage=75',
        migrate: '--max-old-space-size-percentage=75',
      },
    );
    const tuned = render(
      '--set',
      'api.heapPercent=40,worker.heapPercent=0,scheduler.heapPercent=null,migrate.heapPercent=90',
    );
    expect(valueOf(tuned, 'api', 'NODE_OPTIONS')).toBe('--max-old-space-size-percentage=40');
    expect(valueOf(tuned, 'migrate', 'NODE_OPTIONS')).toBe('--max-old-space-size-percentage=90');
    for (const role of ['worker', 'scheduler'])
      expect(envOf(tuned, role).map((e) => e.name)).not.toContain('NODE_OPTIONS');
    const { status, stderr } = run(['--set', 'worker.heapPercent=101']);
    expect(status).toBe(1);
    expect(stderr).toMatch(/worker\.heapPercent/);
  });

  it('adds each role its own environment after extraEnv, and keeps a NODE_OPTIONS of yours', () => {
    const file = valuesFile('role-env', {
      extraConfig: { NODE_OPTIONS: '--enable-source-maps' },
      extraEnv: [
        { name: 'SHARED', value: 'everyone' },
        { name: 'TUNED', value: 'extraEnv' },
      ],
      api: { env: [{ name: 'TUNED', value: 'api' }] },
      worker: {
        env: [
          { name: 'ONLY_WORKER', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
          { name: 'NODE_OPTIONS', value: '--max-old-space-size=300' },
        ],
      },
      migrate: { env: [{ name: 'ONLY_MIGRATE', value: 'migrate' }] },
    });
    const manifests = render('-f', file);
    const names = (role: string) => envOf(manifests, role).map((e) => e.name);
    for (const role of ROLES) {
      // One of each name: a role's variable replaces extraEnv's, the chart's NODE_OPTIONS gives way to one of yours.
      expect(new Set(names(role)).size, role).toBe(names(role).length);
      expect(valueOf(manifests, role, 'SHARED')).toBe('everyone');
      // After the Secret's variables, so they can refer to them ($(VAR)).
      expect(names(role).indexOf('SHARED')).toBeGreaterThan(names(role).indexOf('DATABASE_URL'));
    }
    expect(valueOf(manifests, 'api', 'TUNED')).toBe('api');
    expect(names('api').indexOf('TUNED')).toBeGreaterThan(names('api').indexOf('SHARED'));
    expect(valueOf(manifests, 'scheduler', 'TUNED')).toBe('extraEnv');
    expect(envOf(manifests, 'worker').find((e) => e.name === 'ONLY_WORKER')).toEqual({
      name: 'ONLY_WORKER',
      valueFrom: { fieldRef: { fieldPath: 'metadata.name' } },
    });
    expect(names('api')).not.toContain('ONLY_WORKER');
    expect(valueOf(manifests, 'migrate', 'ONLY_MIGRATE')).toBe('migrate');
    expect(names('worker')).not.toContain('ONLY_MIGRATE');
    // NODE_OPTIONS of extraConfig (the ConfigMap) is kept ahead of the flag, which would otherwise hide it.
    expect(valueOf(manifests, 'api', 'NODE_OPTIONS')).toBe(
      '--enable-source-maps --max-old-space-size-percentage=60',
    );
    expect(valueOf(manifests, 'worker', 'NODE_OPTIONS')).toBe('--max-old-space-size=300');
  });

  it('renders neither NetworkPolicies nor a ScaledObject by default', () => {
    const kinds = render(...SECRET_VALUES).map((m) => m.kind);
    for (const kind of ['NetworkPolicy', 'ScaledObject', 'TriggerAuthentication'])
      expect(kinds).not.toContain(kind);
    expect(find(render(...SECRET_VALUES), 'Deployment', 'rw-riskwatch-worker').spec?.replicas).toBe(1);
  });

  it('renders one NetworkPolicy per role: its pods, its ports, DNS and the destinations of values', () => {
    const file = valuesFile('network-policy', {
      config: { jwt: { jwksUrl: 'https://idp.example/.well-known/jwks.json' } },
      networkPolicy: {
        enabled: true,
        api: { ingressFrom: [{ namespaceSelector: { matchLabels: { name: 'ingress-nginx' } } }] },
        metrics: {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
          podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
        },
        postgres: { cidrs: ['10.0.12.0/24'], ports: [5432] },
        redis: {
          cidrs: ['10.0.13.5/32'],
          peers: [{ podSelector: { matchLabels: { app: 'redis' } } }],
          ports: [6380],
        },
        jwks: { cidrs: ['203.0.113.10/32'] },
        nodeProviders: { cidrs: ['0.0.0.0/0'], ports: [443, { port: 8545, protocol: 'TCP' }] },
        webhooks: { cidrs: ['198.51.100.0/24'], ports: [443, 8443] },
        extraEgress: [{ to: [cidr('10.0.99.1/32')], ports: tcp(4317) }],
      },
    });
    const manifests = render('-f', file);
    expect(
      manifests
        .filter((m) => m.kind === 'NetworkPolicy')
        .map((m) => m.metadata.name)
        .sort(),
    ).toEqual(ROLES.map((role) => `rw-riskwatch-${role}`).sort());
    const POSTGRES = { ports: tcp(5432), to: [cidr('10.0.12.0/24')] };
    const REDIS = {
      ports: tcp(6380),
      to: [cidr('10.0.13.5/32'), { podSelector: { matchLabels: { app: 'redis' } } }],
    };
    const JWKS = { ports: tcp(443), to: [cidr('203.0.113.10/32')] };
    const PROVIDERS = { ports: tcp(443, 8545), to: [cidr('0.0.0.0/0')] };
    const WEBHOOKS = { ports: tcp(443, 8443), to: [cidr('198.51.100.0/24')] };
    const EXTRA = { to: [cidr('10.0.99.1/32')], ports: tcp(4317) };
    const expectedEgress = {
      api: [DNS_RULE, POSTGRES, REDIS, JWKS, PROVIDERS, EXTRA],
      worker: [DNS_RULE, POSTGRES, REDIS, PROVIDERS, WEBHOOKS, EXTRA],
      scheduler: [DNS_RULE, POSTGRES, REDIS, EXTRA],
      migrate: [DNS_RULE, POSTGRES, EXTRA],
    };
    const metricsIngress = {
      ports: tcp(9464),
      from: [
        {
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': 'monitoring' } },
          podSelector: { matchLabels: { 'app.kubernetes.io/name': 'prometheus' } },
        },
      ],
    };
    for (const role of ROLES) {
      const spec = policy(manifests, role);
      // The policy selects exactly the pods of its role (the labels of the workload's pod template).
      const podLabels = workloadOf(manifests, role).spec?.template?.metadata?.labels;
      expect(spec.podSelector.matchLabels, role).toEqual({
        'app.kubernetes.io/name': 'riskwatch',
        'app.kubernetes.io/instance': 'rw',
        'app.kubernetes.io/component': role,
      });
      expect(podLabels).toMatchObject(spec.podSelector.matchLabels);
      expect(spec.policyTypes).toEqual(['Ingress', 'Egress']);
      expect(spec.egress, role).toEqual(expectedEgress[role]);
    }
    expect(policy(manifests, 'api').ingress).toEqual([
      { ports: tcp(8080), from: [{ namespaceSelector: { matchLabels: { name: 'ingress-nginx' } } }] },
      metricsIngress,
    ]);
    for (const role of ['worker', 'scheduler'])
      expect(policy(manifests, role).ingress).toEqual([metricsIngress]);
    expect(policy(manifests, 'migrate').ingress).toEqual([]);
    // The Job's policy is in place before the Job runs, as its other hook resources.
    expect(find(manifests, 'NetworkPolicy', 'rw-riskwatch-migrate').metadata.annotations).toMatchObject({
      'helm.sh/hook': 'pre-install,pre-upgrade',
      'helm.sh/hook-weight': '-10',
    });
  });

  it('opens a destination without addresses to any address on its ports, and closes one without ports', () => {
    const manifests = render(
      '--set',
      'networkPolicy.enabled=true,networkPolicy.metrics.namespaceSelector=null,networkPolicy.metrics.podSelector=null',
      '-f',
      valuesFile('np-closed', { networkPolicy: { webhooks: { ports: [] }, dns: { ports: [] } } }),
    );
    const api = policy(manifests, 'api');
    // No ingressFrom, no metrics selectors: from anywhere, to those ports only.
    expect(api.ingress).toEqual([{ ports: tcp(8080) }, { ports: tcp(9464) }]);
    expect(policy(manifests, 'worker').egress).toEqual([
      { ports: tcp(5432) },
      { ports: tcp(6379) },
      { ports: tcp(443) },
    ]);
    expect(policy(manifests, 'migrate').egress).toEqual([{ ports: tcp(5432) }]);
    // The default metrics peer: every pod of every namespace.
    expect(policy(render('--set', 'networkPolicy.enabled=true'), 'worker').ingress).toEqual([
      { ports: tcp(9464), from: [{ namespaceSelector: {}, podSelector: {} }] },
    ]);
    const bad = run([
      '--set',
      'networkPolicy.enabled=true',
      '-f',
      valuesFile('np-bad', { networkPolicy: { postgres: { cidrs: ['db.internal'] } } }),
    ]);
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/networkPolicy\.postgres\.cidrs/);
  });

  it('scales the worker with KEDA on the watchlist-chunk wait list and the pending webhook deliveries', async () => {
    const file = valuesFile('keda', {
      config: { redisKeyPrefix: 'acme:' },
      worker: {
        keda: {
          enabled: true,
          minReplicaCount: 2,
          maxReplicaCount: 12,
          pollingInterval: 15,
          cooldownPeriod: 120,
          redis: { listLength: 24 },
          prometheus: {
            serverAddress: 'http://prometheus-operated.monitoring.svc:9090',
            query: 'max(riskwatch_webhook_pending_deliveries{namespace="{{ .Release.Namespace }}"})',
            threshold: 250,
          },
        },
      },
    });
    const args = [
      ...SECRET_VALUES,
      '--set-string',
      'secrets.redisUrl=rediss://:s3cr3t-pw@redis.internal:6380/2',
      '-f',
      file,
    ];
    const manifests = render(...args);
    const spec = scaledObject(manifests);
    expect(spec).toMatchObject({
      scaleTargetRef: { apiVersion: 'apps/v1', kind: 'Deployment', name: 'rw-riskwatch-worker' },
      minReplicaCount: 2,
      maxReplicaCount: 12,
      pollingInterval: 15,
      cooldownPeriod: 120,
    });
    expect(find(manifests, 'Deployment', spec.scaleTargetRef.name).metadata.labels).toMatchObject({
      'app.kubernetes.io/component': 'worker',
    });
    // KEDA owns the replica count.
    expect(find(manifests, 'Deployment', 'rw-riskwatch-worker').spec?.replicas).toBeUndefined();
    const [redis, prometheus, ...rest] = spec.triggers;
    expect(rest).toEqual([]);
    expect(redis).toEqual({
      type: 'redis',
      metadata: {
        address: 'redis.internal:6380',
        listName: 'acme:bull:watchlist-chunk:wait',
        listLength: '24',
        activationListLength: '0',
        databaseIndex: '2',
        enableTLS: 'true',
      },
      authenticationRef: { name: 'rw-riskwatch-worker-redis' },
    });
    // The list BullMQ keeps the waiting jobs in, as src/jobs/queues.ts names the queue.
    expect(redis?.metadata.listName).toBe(await chunkWaitKey('acme:'));
    expect(prometheus).toEqual({
      type: 'prometheus',
      metadata: {
        serverAddress: 'http://prometheus-operated.monitoring.svc:9090',
        query: 'max(riskwatch_webhook_pending_deliveries{namespace="sec"})',
        threshold: '250',
        activationThreshold: '0',
      },
    });
    // The password reaches KEDA from the chart's Secret, never in plain text.
    const auth = find(manifests, 'TriggerAuthentication', 'rw-riskwatch-worker-redis').spec;
    expect(auth).toEqual({
      secretTargetRef: [{ parameter: 'password', name: 'rw-riskwatch', key: 'REDIS_PASSWORD' }],
    });
    expect(decode(find(manifests, 'Secret', 'rw-riskwatch').data).REDIS_PASSWORD).toBe('s3cr3t-pw');
    expect(run(args).stdout).not.toContain('s3cr3t-pw');
    // Defaults: the configured prefix's key, no prometheus trigger without an address.
    const plain = scaledObject(
      render('--set-string', 'secrets.redisUrl=redis://redis.internal', '--set', 'worker.keda.enabled=true'),
    );
    expect(plain.triggers).toEqual([
      {
        type: 'redis',
        metadata: {
          address: 'redis.internal:6379',
          listName: await chunkWaitKey('rw:'),
          listLength: '16',
          activationListLength: '0',
          databaseIndex: '0',
          enableTLS: 'false',
        },
      },
    ]);
    expect(plain.triggers[0]?.metadata.listName).toBe('rw:bull:watchlist-chunk:wait');
  });

  it("scales on the hash-tagged wait list through KEDA's redis-cluster scaler with a Redis Cluster", async () => {
    const nodes = 'redis-0.redis.internal:6379,redis-1.redis.internal:6379';
    const manifests = render(
      ...SECRET_VALUES,
      '--set-string',
      'secrets.redisUrl=rediss://:s3cr3t-pw@ignored.internal:6379',
      '--set-string',
      `config.redisClusterNodes=${nodes.replace(',', '\\,')}`,
      '--set',
      'worker.keda.enabled=true',
    );
    expect(find(manifests, 'ConfigMap', 'rw-riskwatch').data?.REDIS_CLUSTER_NODES).toBe(nodes);
    expect(scaledObject(manifests).triggers).toEqual([
      {
        type: 'redis-cluster',
        metadata: {
          addresses: nodes,
          listName: await chunkWaitKey('rw:', true),
          listLength: '16',
          activationListLength: '0',
          enableTLS: 'true',
        },
        authenticationRef: { name: 'rw-riskwatch-worker-redis' },
      },
    ]);
    expect(scaledObject(manifests).triggers[0]?.metadata.listName).toBe('rw:bull:{watchlist-chunk}:wait');
  });

  it('takes Redis from values with an existing Secret, and refuses KEDA together with the worker HPA', () => {
    const missing = run(['--set', 'secrets.existingSecret=mine,worker.keda.enabled=true']);
    expect(missing.status).toBe(1);
    expect(missing.stderr).toMatch(/worker\.keda\.redis\.address .*required with secrets\.existingSecret/);
    const manifests = render(
      '--set',
      'secrets.existingSecret=mine,worker.keda.enabled=true,worker.keda.redis.address=redis.internal:6379',
    );
    expect(find(manifests, 'TriggerAuthentication', 'rw-riskwatch-worker-redis').spec).toEqual({
      secretTargetRef: [{ parameter: 'password', name: 'mine', key: 'REDIS_PASSWORD' }],
    });
    const own = render(
      '--set',
      'secrets.existingSecret=mine,worker.keda.enabled=true,worker.keda.redis.address=r:6379,worker.keda.redis.authenticationRef=theirs',
    );
    expect(own.map((m) => m.kind)).not.toContain('TriggerAuthentication');
    expect(scaledObject(own).triggers[0]?.authenticationRef).toEqual({ name: 'theirs' });

    const both = run(['--set', 'worker.keda.enabled=true,worker.autoscaling.enabled=true']);
    expect(both.status).toBe(1);
    expect(both.stderr).toMatch(/worker\.keda\.enabled and worker\.autoscaling\.enabled exclude each other/);
    // The alternative without KEDA: an HPA on CPU for the worker.
    const hpa = render('--set', 'worker.autoscaling.enabled=true,worker.autoscaling.maxReplicas=6');
    expect(find(hpa, 'HorizontalPodAutoscaler', 'rw-riskwatch-worker').spec).toMatchObject({
      scaleTargetRef: { kind: 'Deployment', name: 'rw-riskwatch-worker' },
      minReplicas: 1,
      maxReplicas: 6,
      metrics: [{ type: 'Resource', resource: { name: 'cpu', target: { averageUtilization: 70 } } }],
    });
    expect(find(hpa, 'Deployment', 'rw-riskwatch-worker').spec?.replicas).toBeUndefined();
    expect(
      hpa.some((m) => m.kind === 'HorizontalPodAutoscaler' && m.metadata.name === 'rw-riskwatch-api'),
    ).toBe(false);
  });
});
