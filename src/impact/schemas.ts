import { z } from 'zod';

const total = z.object({ total: z.int(), last_24h: z.int() });

/** `GET /api/public/impact`; also what the snapshot row holds (see ImpactService.refresh). */
export const impactSchema = z
  .object({
    generated_at: z.string(),
    assessments: total,
    token_scans: total,
    preflights: z.object({ total: z.int(), blocked: z.int(), warned: z.int() }),
    high_risk_findings: z.object({ total: z.int() }),
    watchlists: z.object({ targets_monitored: z.int(), alerts_delivered: z.int() }),
    chains: z.array(z.string()),
  })
  .meta({ id: 'Impact' });
export type ImpactBody = z.infer<typeof impactSchema>;
