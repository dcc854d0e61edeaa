import { describe, expect, it } from 'vitest';
import {
  apiProcessCount,
  AUTO_API_PROCESSES_MAX,
  cgroupCpus,
  childExecArgv,
  heapPercent,
} from '../../src/cluster.js';

describe('server.api_processes', () => {
  it('takes an explicit number as it is', () => {
    expect(apiProcessCount(1, 64, undefined)).toBe(1);
    expect(apiProcessCount(12, 2, '100000 100000')).toBe(12);
  });

  it('0: one per core, fewer under a container CPU limit, at most the cap', () => {
    expect(apiProcessCount(0, 2, undefined)).toBe(2);
    expect(apiProcessCount(0, 4, 'max 100000')).toBe(4);
    // docker run --cpus=1.5 on a 16-core host: 2 processes, not 16
    expect(apiProcessCount(0, 16, '150000 100000')).toBe(2);
    // a 64-core host without limits: the cap, so 64 × DATABASE_POOL_MAX connections cannot exhaust PostgreSQL
    expect(apiProcessCount(0, 64, undefined)).toBe(AUTO_API_PROCESSES_MAX);
  });

  it('reads cgroup v2 cpu.max, and ignores what is not a quota', () => {
    expect(cgroupCpus('200000 100000\n')).toBe(2);
    expect(cgroupCpus('50000 100000')).toBe(1);
    expect(cgroupCpus('max 100000')).toBeUndefined();
    expect(cgroupCpus(undefined)).toBeUndefined();
    expect(cgroupCpus('garbage')).toBeUndefined();
  });
});

describe('the heap of the API processes', () => {
  it('reads --max-old-space-size-percentage from the command line, which wins over NODE_OPTIONS', () => {
    expect(heapPercent([], undefined)).toBeUndefined();
    expect(heapPercent(['--enable-source-maps'], '--trace-warnings')).toBeUndefined();
    expect(heapPercent([], '--max-old-space-size-percentage=75')).toBe(75);
    expect(heapPercent([], '--trace-warnings --max-old-space-size-percentage 60 --x')).toBe(60);
    expect(heapPercent([], '--max-old-space-size-percentage=50 --max_old_space_size_percentage=40')).toBe(40);
    expect(heapPercent(['--max-old-space-size-percentage=30'], '--max-old-space-size-percentage=75')).toBe(
      30,
    );
    expect(heapPercent(['--max-old-space-size-percentage', '12.5'], undefined)).toBe(12.5);
    expect(heapPercent([], '--max-old-space-size=512')).toBeUndefined(); // a size in MiB, not a share
  });

  it('gives each child its share of the percentage, rounded down, at least 1, on its command line', () => {
    expect(childExecArgv([], undefined, 4)).toBeUndefined();
    expect(childExecArgv([], '--max-old-space-size-percentage=60', 1)).toEqual({
      execArgv: ['--max-old-space-size-percentage=60'],
      heapPercent: 60,
    });
    expect(childExecArgv([], '--max-old-space-size-percentage=75', 2)?.heapPercent).toBe(37);
    expect(childExecArgv([], '--max-old-space-size-percentage=50', 3)?.heapPercent).toBe(16);
    expect(childExecArgv([], '--max-old-space-size-percentage=5', 8)?.heapPercent).toBe(1);
    // The supervisor's own flag is replaced (either spelling), its other options kept.
    expect(
      childExecArgv(
        [
          '--enable-source-maps',
          '--max-old-space-size-percentage',
          '80',
          '--max_old_space_size_percentage=90',
        ],
        undefined,
        3,
      ),
    ).toEqual({ execArgv: ['--enable-source-maps', '--max-old-space-size-percentage=30'], heapPercent: 30 });
  });
});
