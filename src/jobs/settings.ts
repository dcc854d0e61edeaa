import { z } from 'zod';
import { cron, type EnvVars } from '../platform/config.js';

/** The cron expression of each periodic job; a job's contract (queues.ts) names the one that drives it. */
export const schedulerSettings = z.object({
  impact_refresh_cron: cron,
  usage_prune_cron: cron,
  watchlists_cron: cron,
  webhooks_sweep_cron: cron,
  events_prune_cron: cron,
  audit_prune_cron: cron,
  screenings_prune_cron: cron,
  partitions_maintain_cron: cron,
});

export type SchedulerSettings = z.infer<typeof schedulerSettings>;

export const SCHEDULER_ENV_VARS: EnvVars = {
  RISKWATCH_IMPACT_REFRESH_CRON: 'scheduler.impact_refresh_cron',
  RISKWATCH_USAGE_PRUNE_CRON: 'scheduler.usage_prune_cron',
  RISKWATCH_WATCHLISTS_CRON: 'scheduler.watchlists_cron',
  RISKWATCH_WEBHOOKS_SWEEP_CRON: 'scheduler.webhooks_sweep_cron',
  RISKWATCH_EVENTS_PRUNE_CRON: 'scheduler.events_prune_cron',
  RISKWATCH_AUDIT_PRUNE_CRON: 'scheduler.audit_prune_cron',
  RISKWATCH_SCREENINGS_PRUNE_CRON: 'scheduler.screenings_prune_cron',
  RISKWATCH_PARTITIONS_MAINTAIN_CRON: 'scheduler.partitions_maintain_cron',
};
