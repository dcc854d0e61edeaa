import { lstatSync, readFileSync, readlinkSync } from 'node:fs';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import { ChartRender, CHART } from '../support/chart-render.js';

/*
 * The Grafana dashboard (helm/riskwatch/dashboards/riskwatch.json) as a file, and as the chart ships it:
 * a ConfigMap for Grafana's dashboard sidecar (templates/grafana-dashboard.yaml). Its queries are checked
 * against a real Prometheus by test/e2e/grafana-dashboard.test.ts.
 */

const DASHBOARD_FILE = join(CHART, 'dashboards', 'riskwatch.json');
const DATASOURCE = { type: 'prometheus', uid: '${datasource}' };

interface Target {
  datasource?: unknown;
  expr?: string;
  refId?: string;
}
interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: unknown;
  targets?: Target[];
  gridPos: { h: number; w: number; x: number; y: number };
}
interface Variable {
  name: string;
  type: string;
  query?: unknown;
  datasource?: unknown;
}
interface Dashboard {
  uid: string;
  title: string;
  schemaVersion: number;
  panels: Panel[];
  templating: { list: Variable[] };
  [key: string]: unknown;
}
interface Manifest {
  kind: string;
  metadata: {
    name: string;
    namespace?: string;
    labels?: Record<string, string>;
    annotations?: Record<string, string>;
  };
  data?: Record<string, string>;
}

const dashboardText = readFileSync(DASHBOARD_FILE, 'utf8');
const dashboard = JSON.parse(dashboardText) as Dashboard;
const queryPanels = dashboard.panels.filter((p) => p.type !== 'row');

describe('the Grafana dashboard file', () => {
  it('is a Grafana 11 dashboard with no __inputs: nothing to fill in on import', () => {
    expect(dashboard.schemaVersion).toBe(39);
    expect(dashboard.uid).toBe('riskwatch');
    expect(dashboard).not.toHaveProperty('__inputs');
    expect(dashboard).not.toHaveProperty('__requires');
    expect(dashboardText).not.toMatch(/\$\{DS_[A-Z_]+\}/);
  });

  it('has a datasource variable (any Prometheus) and a job variable read through it', () => {
    const [datasource, job] = dashboard.templating.list;
    expect(datasource).toMatchObject({ name: 'datasource', type: 'datasource', query: 'prometheus' });
    expect(job).toMatchObject({
      name: 'job',
      type: 'query',
      datasource: DATASOURCE,
      includeAll: true,
      allValue: '.+',
    });
    expect(JSON.stringify(job?.query)).toContain('label_values(riskwatch_build_info, job)');
  });

  it('reads every panel and every query through ${datasource}', () => {
    expect(queryPanels.length).toBeGreaterThanOrEqual(30);
    for (const panel of queryPanels) {
      expect(panel.datasource, panel.title).toEqual(DATASOURCE);
      expect(panel.targets?.length, panel.title).toBeGreaterThan(0);
      for (const target of panel.targets ?? []) {
        expect(target.datasource, panel.title).toEqual(DATASOURCE);
        expect(target.expr, panel.title).toBeTruthy();
        // Every selector of a riskwatch metric or a process metric is filtered by the job variable.
        expect(target.expr, panel.title).toContain('job=~"$job"');
      }
    }
  });

  it('uses $__rate_interval for every range, never a fixed window', () => {
    for (const panel of queryPanels)
      for (const { expr = '' } of panel.targets ?? []) {
        const unquoted = expr.replace(/"(?:[^"\\]|\\.)*"/g, '""');
        const ranges = [...unquoted.matchAll(/\[([^\]]+)\]/g)].map((m) => m[1]);
        for (const range of ranges) expect(range, `${panel.title}: ${expr}`).toBe('$__rate_interval');
        if (/\b(rate|increase|irate)\(/.test(expr)) expect(ranges.length, expr).toBeGreaterThan(0);
      }
  });

  it('groups the panels in rows: API to processes', () => {
    expect(dashboard.panels[0]?.type).toBe('row');
    expect(dashboard.panels.filter((p) => p.type === 'row').map((p) => p.title)).toEqual([
      'API',
      'Developer API',
      'Risk engine',
      'Node providers',
      'Watchlists',
      'Webhooks',
      'Queues',
      'Processes',
    ]);
    // Every row holds panels; ids are unique; nothing is wider than the grid or overlaps another panel.
    const kinds = dashboard.panels.map((p) => p.type);
    kinds.forEach((kind, i) => {
      if (kind === 'row') expect(kinds[i + 1]).not.toBe('row');
    });
    expect(new Set(dashboard.panels.map((p) => p.id)).size).toBe(dashboard.panels.length);
    const cells = new Set<string>();
    for (const { gridPos: g, title } of dashboard.panels) {
      expect(g.x + g.w, title).toBeLessThanOrEqual(24);
      for (let x = g.x; x < g.x + g.w; x++)
        for (let y = g.y; y < g.y + g.h; y++) {
          expect(cells.has(`${x},${y}`), `${title} overlaps at ${x},${y}`).toBe(false);
          cells.add(`${x},${y}`);
        }
    }
  });

  it('is one file: deploy/grafana/dashboards/riskwatch.json is a relative symlink to it', () => {
    const link = join(PROJECT_ROOT, 'deploy', 'grafana', 'dashboards', 'riskwatch.json');
    expect(lstatSync(link).isSymbolicLink()).toBe(true);
    const target = readlinkSync(link);
    expect(isAbsolute(target)).toBe(false);
    expect(resolve(dirname(link), target)).toBe(DASHBOARD_FILE);
    expect(readFileSync(link, 'utf8')).toBe(dashboardText);
  });
});

const chart = new ChartRender();
const run = (args: string[]) => chart.run(args);
const render = (...args: string[]) => chart.render<Manifest>(...args);

const dashboardMap = (manifests: Manifest[]) =>
  manifests.filter((m) => m.kind === 'ConfigMap' && m.metadata.name.endsWith('-dashboard'));

describe('the chart ConfigMap of the dashboard (grafana.dashboards)', () => {
  beforeAll(() => chart.build('riskwatch-helm-dashboard-'), 120_000);
  afterAll(() => chart.cleanup());

  it('is not rendered by default', () => {
    expect(dashboardMap(render())).toEqual([]);
  });

  it('holds the dashboard JSON as it is, labelled for the Grafana sidecar, in the release namespace', () => {
    const [map, ...more] = dashboardMap(render('--set', 'grafana.dashboards.enabled=true'));
    expect(more).toEqual([]);
    expect(map?.metadata.name).toBe('rw-riskwatch-dashboard');
    expect(map?.metadata.namespace).toBe('sec');
    expect(map?.metadata.labels).toMatchObject({
      grafana_dashboard: '1',
      'app.kubernetes.io/instance': 'rw',
      'app.kubernetes.io/managed-by': 'Helm',
    });
    expect(map?.metadata.annotations).toBeUndefined();
    expect(Object.keys(map?.data ?? {})).toEqual(['riskwatch.json']);
    const shipped = map?.data?.['riskwatch.json'] ?? '';
    expect(JSON.parse(shipped)).toEqual(dashboard);
    expect(shipped).toBe(dashboardText.trim());
  });

  it('takes the label, the namespace and annotations (a sidecar folder) from values', () => {
    const [map] = dashboardMap(
      render(
        '--set',
        'grafana.dashboards.enabled=true',
        '--set',
        'grafana.dashboards.label=example.com/dashboard',
        '--set-string',
        'grafana.dashboards.labelValue=riskwatch',
        '--set',
        'grafana.dashboards.namespace=monitoring',
        '--set',
        'grafana.dashboards.annotations.grafana_folder=Riskwatch',
      ),
    );
    expect(map?.metadata.namespace).toBe('monitoring');
    expect(map?.metadata.labels?.['example.com/dashboard']).toBe('riskwatch');
    expect(map?.metadata.labels).not.toHaveProperty('grafana_dashboard');
    expect(map?.metadata.annotations).toEqual({ grafana_folder: 'Riskwatch' });
  });

  it.each([
    ['an unknown key', ['--set', 'grafana.dashboards.folder=x']],
    ['a label value Kubernetes refuses', ['--set-string', 'grafana.dashboards.labelValue=not valid']],
    ['a number as the label value', ['--set', 'grafana.dashboards.labelValue=1']],
    ['a namespace Kubernetes refuses', ['--set', 'grafana.dashboards.namespace=Monitoring']],
    [
      'an empty label key',
      ['--set', 'grafana.dashboards.enabled=true', '--set-string', 'grafana.dashboards.label='],
    ],
  ])('refuses %s (values.schema.json)', (_name, args) => {
    const { status, stdout, stderr } = run(args);
    expect(status, stdout).toBe(1);
    expect(stderr).toMatch(/grafana/);
  });
});
