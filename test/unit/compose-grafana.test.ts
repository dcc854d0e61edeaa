import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/platform/paths.js';

/*
 * The monitoring profile of docker-compose.yml: Grafana beside Prometheus, provisioned from deploy/grafana
 * with the chart's dashboard. (test/unit/compose.test.ts checks the whole file against the Compose schema.)
 */

interface Service {
  image?: string;
  profiles?: string[];
  entrypoint?: string[];
  environment?: Record<string, string>;
  volumes?: string[];
  ports?: unknown;
  depends_on?: unknown;
}

const text = readFileSync(join(PROJECT_ROOT, 'docker-compose.yml'), 'utf8');
const compose = parseYaml(text, { merge: true }) as {
  services: Record<string, Service>;
  volumes: Record<string, unknown>;
};
const grafana = compose.services.grafana!;
const provisioning = (path: string) =>
  parseYaml(readFileSync(join(PROJECT_ROOT, 'deploy', 'grafana', 'provisioning', path), 'utf8')) as Record<
    string,
    Record<string, unknown>[]
  >;

/** The entrypoint's shell script as the container gets it (compose turns `$$` into `$`). */
const entrypointScript = () => {
  const [shell, flag, script] = grafana.entrypoint ?? [];
  expect([shell, flag]).toEqual(['/bin/sh', '-c']);
  return script!.replaceAll('$$', '$');
};

describe('docker-compose.yml, profile monitoring: Grafana', () => {
  it('runs Grafana 11 in the monitoring profile only, beside Prometheus, published nowhere', () => {
    expect(grafana.image).toMatch(/^grafana\/grafana-oss:11\.\d+\.\d+$/);
    expect(grafana.profiles).toEqual(['monitoring']);
    expect(compose.services.prometheus?.profiles).toEqual(['monitoring']);
    expect(grafana.ports).toBeUndefined();
    expect(grafana.depends_on).toEqual(['prometheus']);
    for (const [name, service] of Object.entries(compose.services))
      if (!['prometheus', 'grafana'].includes(name)) expect(service.profiles, name).toBeUndefined();
  });

  it('mounts the provisioning and the chart dashboard read-only, and keeps its data in a named volume', () => {
    expect(grafana.volumes).toEqual([
      './deploy/grafana/provisioning:/etc/grafana/provisioning:ro',
      './helm/riskwatch/dashboards:/etc/grafana/dashboards/riskwatch:ro',
      'grafana-data:/var/lib/grafana',
    ]);
    expect(compose.volumes).toHaveProperty('grafana-data');
    // The dashboards provider reads where the chart's dashboards are mounted.
    const [provider] = provisioning('dashboards/riskwatch.yml').providers!;
    expect(provider).toMatchObject({
      type: 'file',
      options: { path: '/etc/grafana/dashboards/riskwatch' },
    });
    // The data source is the compose Prometheus, the one the dashboard's variable picks by default.
    const [datasource] = provisioning('datasources/prometheus.yml').datasources!;
    expect(datasource).toMatchObject({
      type: 'prometheus',
      url: 'http://prometheus:9090',
      isDefault: true,
    });
    // Grafana sizes $__rate_interval from the scrape interval it is told.
    const prometheusYml = readFileSync(join(PROJECT_ROOT, 'deploy', 'prometheus', 'prometheus.yml'), 'utf8');
    const scrape = parseYaml(prometheusYml) as { global: { scrape_interval: string } };
    expect(datasource?.jsonData).toMatchObject({ timeInterval: scrape.global.scrape_interval });
  });

  it('needs GRAFANA_ADMIN_PASSWORD for Grafana only: a plain `docker compose up` interpolates without it', () => {
    // Compose interpolates every service, in an active profile or not: a `:?` here would stop every `up`.
    const uses = [...text.matchAll(/\$\{GRAFANA_ADMIN_PASSWORD([^}]*)\}/g)].map((m) => m[1]);
    expect(uses).toEqual([':-']);
    expect(text).not.toMatch(/\$\{GRAFANA_\w*:?\?/);
    expect(grafana.environment).toMatchObject({
      GF_SECURITY_ADMIN_PASSWORD: '${GRAFANA_ADMIN_PASSWORD:-}',
      GF_USERS_ALLOW_SIGN_UP: 'false',
    });
    // The header says how to set it.
    expect(text).toMatch(/^#\s+echo "GRAFANA_ADMIN_PASSWORD=\$\(openssl rand -hex 16\)" >>\.env$/m);
  });

  it('refuses to start Grafana (rather than fall back to admin/admin) without the password', () => {
    const script = entrypointScript();
    const sh = (password: string | undefined) =>
      spawnSync('/bin/sh', ['-c', script], {
        encoding: 'utf8',
        env: {
          PATH: process.env.PATH,
          ...(password === undefined ? {} : { GF_SECURITY_ADMIN_PASSWORD: password }),
        },
      });
    for (const missing of [undefined, '']) {
      const refused = sh(missing);
      expect(refused.status).toBe(78);
      expect(refused.stderr).toContain('set GRAFANA_ADMIN_PASSWORD in .env');
    }
    // With a password it hands over to the image's own entrypoint (absent here: sh's "not found", 127).
    const started = sh('s3cret');
    expect(started.status).toBe(127);
    expect(started.stderr).toContain('/run.sh');
  });
});
