import { spawn } from 'node:child_process';

/**
 * prom-client's default metrics name three gauges `*_total`, which promtool's linter flags. They are
 * upstream names that dashboards rely on, so exactly these three findings are tolerated, nothing else.
 */
export const UPSTREAM_LINT = new Set(
  ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total'].map(
    (name) => `${name} non-counter metrics should not have "_total" suffix`,
  ),
);

/** `promtool check metrics` with the exposition on stdin: its exit code and every line it printed. */
export function promtoolCheck(exposition: string): Promise<{ code: number | null; lines: string[] }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.env.PROMTOOL ?? 'promtool', ['check', 'metrics'], {
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => (out += d.toString()));
    child.on('error', (err) =>
      reject(new Error(`promtool is needed (Debian package "prometheus"): ${err.message}`)),
    );
    child.on('close', (code) =>
      resolve({
        code,
        lines: out
          .split('\n')
          .map((l) => l.trim())
          .filter(Boolean),
      }),
    );
    child.stdin.end(exposition);
  });
}

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** Samples of the text exposition format (label values here never contain escaped quotes). */
export function parseSamples(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)/.exec(line);
    if (!m) throw new Error(`unparsable sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, k, v] of (m[2] ?? '').matchAll(/(\w+)="([^"]*)"/g)) labels[k!] = v!;
    samples.push({ name: m[1]!, labels, value: Number(m[3]) });
  }
  return samples;
}
