import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../src/platform/paths.js';

interface Instruction {
  keyword: string;
  args: string;
}

/** deploy/Dockerfile as instructions: comments dropped, `\` continuations joined. */
function instructions(): Instruction[] {
  const text = readFileSync(join(PROJECT_ROOT, 'deploy', 'Dockerfile'), 'utf8');
  return text
    .replace(/\\\r?\n/g, ' ')
    .split(/\r?\n/)
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith('#'))
    .map((line) => {
      const [keyword = '', ...rest] = line.split(/\s+/);
      return { keyword: keyword.toUpperCase(), args: rest.join(' ') };
    });
}

/** The instructions of the last stage: the image that ships. */
function finalStage(all: Instruction[]): Instruction[] {
  const lastFrom = all.findLastIndex((i) => i.keyword === 'FROM');
  return all.slice(lastFrom);
}

const execForm = (args: string) => JSON.parse(args) as string[];

describe('deploy/Dockerfile', () => {
  const all = instructions();
  const final = finalStage(all);
  const one = (keyword: string) => {
    const found = final.filter((i) => i.keyword === keyword);
    expect(found, `exactly one ${keyword} in the final stage`).toHaveLength(1);
    return found[0]!.args;
  };

  it('is multi-stage: the toolchain stays in the build stage', () => {
    expect(all.filter((i) => i.keyword === 'FROM').length).toBeGreaterThanOrEqual(2);
    expect(all.some((i) => i.keyword === 'RUN' && i.args.includes('npm run build'))).toBe(true);
    expect(final.some((i) => i.keyword === 'RUN' && /npm ci\b.*--omit=dev/.test(i.args))).toBe(true);
    expect(final.some((i) => i.keyword === 'COPY' && /--from=build\b.*\bdist\b/.test(i.args))).toBe(true);
  });

  it('runs as a non-root user', () => {
    const user = one('USER');
    expect(user).not.toMatch(/^(root|0)(:|$)/);
    expect(user).toBe('node');
  });

  it('runs node under tini as PID 1, the role as the command', () => {
    expect(execForm(one('ENTRYPOINT'))).toEqual(['/usr/bin/tini', '--', 'node', 'dist/src/main.js']);
    expect(execForm(one('CMD'))).toEqual(['all']);
    expect(final.some((i) => i.keyword === 'RUN' && /apt-get install\b.*\btini\b/.test(i.args))).toBe(true);
  });

  it('never starts through npm, which does not forward signals', () => {
    const text = readFileSync(join(PROJECT_ROOT, 'deploy', 'Dockerfile'), 'utf8');
    expect(text).not.toMatch(/CMD\s*\[\s*"npm"/);
    expect(text).not.toMatch(/ENTRYPOINT\s*\[\s*"npm"/);
    for (const i of all.filter((x) => ['CMD', 'ENTRYPOINT'].includes(x.keyword)))
      expect(i.args.startsWith('['), `${i.keyword} in exec form`).toBe(true);
  });

  it('health-checks /healthz with node (the image has no curl)', () => {
    const healthcheck = one('HEALTHCHECK');
    expect(healthcheck).toContain('/healthz');
    const cmd = execForm(healthcheck.slice(healthcheck.indexOf('CMD') + 3).trim());
    expect(cmd.slice(0, 2)).toEqual(['node', '-e']);
  });

  it('exposes the API and metrics ports and takes the release id as a build argument', () => {
    expect(one('EXPOSE').split(/\s+/).sort()).toEqual(['8080', '9464']);
    expect(final.some((i) => i.keyword === 'ARG' && i.args.startsWith('RISKWATCH_RELEASE_ID'))).toBe(true);
    const env = final.filter((i) => i.keyword === 'ENV').map((i) => i.args);
    expect(env).toContain('RISKWATCH_RELEASE_ID=${RISKWATCH_RELEASE_ID}');
  });
});

describe('.dockerignore', () => {
  it('keeps local builds, dependencies and history out of the build context', () => {
    const patterns = readFileSync(join(PROJECT_ROOT, '.dockerignore'), 'utf8')
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith('#'));
    for (const p of ['**/node_modules', 'dist', '.git', 'coverage', 'test']) expect(patterns).toContain(p);
  });
});
