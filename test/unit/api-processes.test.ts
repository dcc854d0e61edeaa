import { describe, expect, it } from 'vitest';
import { apiProcessCount, AUTO_API_PROCESSES_MAX, cgroupCpus } from '../../src/cluster.js';

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
