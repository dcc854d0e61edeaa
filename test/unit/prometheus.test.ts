import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/platform/paths.js';

const run = promisify(execFile);
const PROMETHEUS_DIR = join(PROJECT_ROOT, 'deploy', 'prometheus');

/** promtool (Debian package prometheus; deploy/local.sh installs it); resolves with its output on exit 0. */
const promtool = (...args: string[]) => run('promtool', args, { cwd: PROMETHEUS_DIR });

describe('deploy/prometheus', () => {
  it('alerts.yml passes promtool check rules', async () => {
    const { stdout } = await promtool('check', 'rules', 'alerts.yml');
    expect(stdout).toMatch(/SUCCESS: \d+ rules found/);
  });

  it('prometheus.yml passes promtool check config, alerts.yml included', async () => {
    const { stdout } = await promtool('check', 'config', 'prometheus.yml');
    expect(stdout).toContain('SUCCESS: 1 rule files found');
    expect(stdout).toContain('is valid prometheus config file syntax');
  });

  it('the alerts fire (and stay quiet) as alerts.test.yml expects', async () => {
    const { stdout } = await promtool('test', 'rules', 'alerts.test.yml');
    expect(stdout).toContain('SUCCESS');
  });
});
