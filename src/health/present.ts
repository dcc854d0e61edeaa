import type { HealthBody, HealthCheckBody } from './schemas.js';
import type { CheckResult, HealthReport } from './service.js';

// Fields a check does not have stay undefined, and JSON leaves them out.
const presentCheck = (c: CheckResult): HealthCheckBody => ({
  status: c.status,
  component_id: c.componentId,
  observed_value: c.observedValue,
  observed_unit: c.observedUnit,
  oldest_wait_s: c.oldestWaitS,
  head: c.head,
  output: c.output,
});

/** The application/health+json document of `/api/agent/health`. */
export const presentHealth = (r: HealthReport): HealthBody => ({
  status: r.status,
  version: r.version,
  release_id: r.releaseId,
  uptime_s: r.uptimeS,
  checks: Object.fromEntries(
    Object.entries(r.checks).map(([name, checks]) => [name, checks.map(presentCheck)]),
  ),
});
