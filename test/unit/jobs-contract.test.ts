import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config.js';
import { JOB_NAMES, JOBS, SCHEDULED_JOB_NAMES, scheduledJobId } from '../../src/jobs/queues.js';

describe('job contracts', () => {
  it('each periodic job names the setting holding its cron expression; each such setting drives a job', () => {
    const scheduler = loadConfig({}).scheduler;
    expect(Object.fromEntries(SCHEDULED_JOB_NAMES.map((name) => [name, scheduler[JOBS[name].cron]]))).toEqual(
      {
        'impact-refresh': '*/15 * * * * *',
        'usage-prune': '17 3 * * *',
        'watchlists-due': '* * * * *',
        'webhooks-sweep': '*/5 * * * * *',
        'events-prune': '23 3 * * *',
        'audit-prune': '29 3 * * *',
        'screenings-prune': '41 3 * * *',
        'partitions-maintain': '7 0 * * *',
      },
    );
    expect(SCHEDULED_JOB_NAMES.map((name) => JOBS[name].cron).sort()).toEqual(Object.keys(scheduler).sort());
  });

  it('a scheduled job carries the time of its tick', () => {
    for (const name of SCHEDULED_JOB_NAMES)
      expect(JOBS[name].payload.parse({ scheduled_at: '2026-11-22T03:17:00.000Z' })).toEqual({
        scheduled_at: '2026-11-22T03:17:00.000Z',
      });
  });

  it('gives every replica the same id for the same tick, in whole seconds and without ":"', () => {
    const tick = new Date('2026-11-22T03:17:00.250Z');
    const id = scheduledJobId('usage-prune', tick);
    expect(id).toBe(`usage-prune-${Math.floor(tick.getTime() / 1000)}`);
    expect(scheduledJobId('usage-prune', new Date(tick))).toBe(id);
    expect(id).not.toContain(':');
  });

  it('lists every job name once', () => {
    expect(new Set(JOB_NAMES).size).toBe(JOB_NAMES.length);
    expect(JOB_NAMES).toEqual(Object.keys(JOBS));
  });
});
