import { z } from 'zod';
import { AppError } from '../platform/errors.js';
import { defineRoute } from '../http/route.js';
import type { HealthService } from './service.js';

const check = z.object({
  status: z.enum(['pass', 'warn', 'fail']),
  component_id: z.string().optional(),
  observed_value: z.number().optional(),
  observed_unit: z.string().optional(),
  oldest_wait_s: z.number().optional(),
  head: z.number().optional(),
  output: z.string().optional(),
});

export const healthSchema = z
  .object({
    status: z.enum(['pass', 'warn', 'fail']),
    version: z.string(),
    release_id: z.string(),
    uptime_s: z.int(),
    checks: z.record(z.string(), z.array(check)),
  })
  .meta({ id: 'Health' });

const plain = z.object({ status: z.string() });

export function healthRoutes(health: HealthService, isShuttingDown: () => boolean) {
  return [
    defineRoute({
      method: 'get',
      path: '/healthz',
      operationId: 'liveness',
      summary: 'Liveness: the process is up (no dependency checks)',
      tag: 'Operations',
      auth: 'none',
      responses: { 200: { description: 'Alive', schema: plain } },
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
        200: { description: 'Ready', schema: plain },
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
        const body = await health.deep();
        return { status: body.status === 'fail' ? 503 : 200, body, contentType: 'application/health+json' };
      },
    }),
  ];
}
