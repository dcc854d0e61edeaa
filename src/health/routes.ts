import { AppError } from '../platform/errors.js';
import { defineRoute } from '../http/route.js';
import { presentHealth } from './present.js';
import { healthSchema, probeSchema } from './schemas.js';
import type { HealthService } from './service.js';

export function healthRoutes(health: HealthService, isShuttingDown: () => boolean) {
  return [
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'liveness',
      summary: 'Liveness: the process is up (no dependency checks)',
      tag: 'Operations',
      auth: 'none',
      responses: { 200: { description: 'Alive', schema: probeSchema } },
      handler: () => ({ body: { status: 'pass' } }),
    }),
    defineRoute({
      method: 'get',
      path: '/readyz',
      operationId: 'readiness',
      summary: 'Readiness: PostgreSQL and Redis reachable, migrations current',
      tag: 'Operations',
      auth: 'none',
      responses: {
        200: { description: 'Ready', schema: probeSchema },
        503: { description: 'Not ready (problem+json, no internals)' },
      },
      handler: async () => {
        if (isShuttingDown() || !(await health.ready()))
          throw new AppError('dependency_unavailable', 'Not ready.');
        return { body: { status: 'pass' } };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/api/agent/health',
      operationId: 'agentHealth',
      summary: 'Deep health for monitoring agents (application/health+json)',
      description:
        'draft-inadarei-api-health-check. 200 for pass/warn, 503 for fail. Checks PostgreSQL, Redis, ' +
        'pending migrations, queue backlogs (with the oldest wait) and live workers.',
      tag: 'Operations',
      auth: 'agent',
      responses: {
        200: { description: 'pass or warn', schema: healthSchema, contentType: 'application/health+json' },
        503: { description: 'fail', schema: healthSchema, contentType: 'application/health+json' },
      },
      handler: async () => {
        const report = await health.deep();
        return {
          status: report.status === 'fail' ? 503 : 200,
          body: presentHealth(report),
          contentType: 'application/health+json',
        };
      },
    }),
  ];
}
