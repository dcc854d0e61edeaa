import { z } from 'zod';

/* The bodies of `/healthz`, `/readyz` and `/api/agent/health`. The routes document with these objects. */

export const HEALTH_STATUSES = ['pass', 'warn', 'fail'] as const;
export type HealthStatus = (typeof HEALTH_STATUSES)[number];

/** One check of the deep health document (draft-inadarei-api-health-check). */
export const healthCheckSchema = z.object({
  status: z.enum(HEALTH_STATUSES),
  component_id: z.string().optional(),
  observed_value: z.number().optional(),
  observed_unit: z.string().optional(),
  oldest_wait_s: z.number().optional(),
  head: z.number().optional(),
  output: z.string().optional(),
});
export type HealthCheckBody = z.infer<typeof healthCheckSchema>;

export const healthSchema = z
  .object({
    status: z.enum(HEALTH_STATUSES),
    version: z.string(),
    release_id: z.string(),
    uptime_s: z.int(),
    checks: z.record(z.string(), z.array(healthCheckSchema)),
  })
  .meta({ id: 'Health' });
export type HealthBody = z.infer<typeof healthSchema>;

/** `/healthz` and `/readyz`: a status and nothing about the install. */
export const probeSchema = z.object({ status: z.string() });
