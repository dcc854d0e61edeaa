import { existsSync, mkdirSync, rmdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A memory cgroup of `limitMb` for a benchmark's process, as a container's memory limit would be: cgroup
 * v2 (`memory.max`) or v1 (`memory.limit_in_bytes`). Needs root; returns `{ why }` where the machine does
 * not allow it. Pass `dir` as RISKWATCH_TEST_CGROUP to startService; `remove` after the
 * process has exited.
 */
export function memoryCgroup(
  name: string,
  limitMb: number,
): { dir: string; remove: () => void } | { why: string } {
  const bytes = String(limitMb * 1024 * 1024);
  const v2 = existsSync('/sys/fs/cgroup/cgroup.controllers');
  const dir = v2 ? join('/sys/fs/cgroup', name) : join('/sys/fs/cgroup/memory', name);
  try {
    mkdirSync(dir, { recursive: true });
    writeFileSync(join(dir, v2 ? 'memory.max' : 'memory.limit_in_bytes'), bytes);
  } catch (err) {
    return { why: `no memory cgroup (${(err as Error).message})` };
  }
  return {
    dir,
    remove: () => {
      try {
        rmdirSync(dir);
      } catch {
        // still in use or already gone
      }
    },
  };
}
