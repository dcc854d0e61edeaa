import { spawnSync } from 'node:child_process';
import { chmodSync, cpSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { PROJECT_ROOT } from '../../src/platform/paths.js';

/*
 * There is no `helm` binary on these machines: the chart is rendered by chart-render, an offline stand-in
 * for `helm template` (values merging, --set, values.schema.json, sprig, output checked as Kubernetes YAML),
 * built here from a temporary copy of ../shared/tools/chart-render (the shared folder may be read-only).
 */

export const CHART = join(PROJECT_ROOT, 'helm', 'riskwatch');
// shared/ sits beside the repository checkout (locally and in CI).
const TOOL_DIR = process.env.CHART_RENDER_DIR || join(PROJECT_ROOT, '..', 'shared', 'tools', 'chart-render');
/** The key webhook signing secrets are encrypted under: the chart renders nothing without one. */
export const SECRETS_KEY = 'c0ffee'.repeat(10) + 'c0de';

/** The chart renderer of one test file: `build()` in beforeAll, `cleanup()` in afterAll. */
export class ChartRender {
  /** A temporary folder of the test file's own (values files may be written there). */
  workDir = '';
  private binary = '';
  // A renderer that cannot be built fails every test with the reason (rather than skipping them).
  private buildError: Error | undefined;

  build(prefix: string): void {
    this.workDir = mkdtempSync(join(tmpdir(), prefix));
    try {
      if (!existsSync(join(TOOL_DIR, 'build.sh')))
        throw new Error(`chart-render not found: ${TOOL_DIR}/build.sh is missing (set CHART_RENDER_DIR)`);
      const copy = join(this.workDir, 'chart-render');
      cpSync(TOOL_DIR, copy, { recursive: true });
      chmodSync(copy, 0o755); // build.sh creates bin/ inside its own folder
      const build = spawnSync('bash', [join(copy, 'build.sh')], { encoding: 'utf8' });
      const built = /^chart-render built: (.+)$/m.exec(build.stdout ?? '')?.[1];
      if (build.status !== 0 || !built)
        throw new Error(
          `chart-render could not be built (build.sh exit ${build.status ?? build.signal}` +
            `${build.error ? `, ${build.error.message}` : ''}):\n` +
            `${(build.stderr ?? '').split('\n').slice(-20).join('\n')}`,
        );
      this.binary = built.trim();
    } catch (err) {
      this.buildError = err as Error;
    }
  }

  cleanup(): void {
    if (this.workDir) rmSync(this.workDir, { recursive: true, force: true });
  }

  /** Renders with `args`, after a secrets key (`--set-string secrets.secretsKey=` in `args` takes it away). */
  run(args: string[]) {
    if (this.buildError) throw this.buildError;
    const withKey = ['--set-string', `secrets.secretsKey=${SECRETS_KEY}`, ...args];
    const result = spawnSync(this.binary, [CHART, '--release-name', 'rw', '-n', 'sec', ...withKey], {
      encoding: 'utf8',
    });
    return { status: result.status, stdout: result.stdout, stderr: result.stderr };
  }

  /** Renders and parses; a non-zero exit fails the test with the renderer's message. */
  render<T>(...args: string[]): T[] {
    const { status, stdout, stderr } = this.run(args);
    if (status !== 0) throw new Error(`chart-render exited ${status}:\n${stderr}`);
    return parseAllDocuments(stdout)
      .map((doc) => doc.toJS() as T | null)
      .filter((m): m is T => m !== null);
  }
}
