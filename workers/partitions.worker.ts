import { maintainPartitions } from '../src/db/partitions.js';
import type { Runtime } from '../src/runtime.js';
import type { JobHandler } from './job-handler.js';

/** The day partitions ahead, and rows waiting in a default partition moved to their day's (src/db/partitions.ts). */
export const partitionsMaintain =
  (rt: Runtime): JobHandler<'partitions-maintain'> =>
  async () => ({ created: await maintainPartitions(rt.orm, rt.config.partitions.days_ahead) });
