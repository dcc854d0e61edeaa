import type { Runtime } from '../src/runtime.js';
import type { JobHandler } from './job-handler.js';

/** Starts what may start of an account's queued screenings (one `state`/`full` at a time). */
export const screeningStart =
  (rt: Runtime): JobHandler<'screening-start'> =>
  async ({ account_id, screening_id }) => ({
    started: await rt.screeningRunner.start(account_id, screening_id),
  });

/** One chunk of a screening: its pending targets screened and written in one transaction. */
export const screeningChunk =
  (rt: Runtime): JobHandler<'screening-chunk'> =>
  async ({ screening_id, from_seq, to_seq }) => ({
    written: await rt.screeningRunner.runChunk(screening_id, from_seq, to_seq),
  });

/**
 * Deletes screenings and their results older than `screenings.retention_days`, then restarts what a lost
 * job left pending (ScreeningRunner.reconcile).
 */
export const screeningsPrune =
  (rt: Runtime): JobHandler<'screenings-prune'> =>
  async () => ({
    deleted: await rt.screeningRunner.prune(rt.config.screenings.retention_days),
    reconciled: await rt.screeningRunner.reconcile(),
  });
