import { AppError } from '../platform/errors.js';
import { defineRoute } from '../http/route.js';
import { impactSchema } from './schemas.js';
import type { ImpactService } from './service.js';

export function impactRoutes(impact: ImpactService) {
  return [
    defineRoute({
      method: 'get',
      path: '/api/public/impact',
      operationId: 'getImpact',
      summary: 'Aggregate, tenant-free activity counters',
      description:
        'Counts of real assessments, scans, preflights, high-risk findings and watchlist activity, from a ' +
        'periodically refreshed aggregate (`generated_at` says when). Zero until the work has happened.',
      tag: 'Public',
      auth: 'none',
      responses: { 200: { description: 'Counters', schema: impactSchema } },
      handler: () => {
        const snapshot = impact.snapshot();
        if (!snapshot) throw new AppError('dependency_unavailable', 'Impact counters are not available yet.');
        return {
          body: snapshot,
          contentType: 'application/json; charset=utf-8',
          headers: { 'Cache-Control': 'public, max-age=60' },
        };
      },
    }),
  ];
}
