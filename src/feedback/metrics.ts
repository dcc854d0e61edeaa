import { Counter, type Registry } from 'prom-client';
import { FEEDBACK_KINDS, type FeedbackKind } from './entities.js';

/**
 * `riskwatch_feedback_total{kind,finding}`: feedback given, by kind and by the finding it names (`none`
 * without one), so operators see which findings users dispute. Both labels are closed sets (three kinds,
 * the findings catalog). Every kind × `none` is there from the start, at 0. Created once per registry: the
 * API process's (src/api.ts).
 */
export class FeedbackMetrics {
  private static readonly byRegistry = new WeakMap<Registry, FeedbackMetrics>();

  private readonly given: Counter<'kind' | 'finding'>;

  static for(registry: Registry): FeedbackMetrics {
    let metrics = FeedbackMetrics.byRegistry.get(registry);
    if (!metrics) {
      metrics = new FeedbackMetrics(registry);
      FeedbackMetrics.byRegistry.set(registry, metrics);
    }
    return metrics;
  }

  private constructor(registry: Registry) {
    this.given = new Counter({
      name: 'riskwatch_feedback_total',
      help: 'Verdict feedback given, by kind and by the finding code it names (none: no finding named).',
      labelNames: ['kind', 'finding'],
      registers: [registry],
    });
    for (const kind of FEEDBACK_KINDS) this.given.inc({ kind, finding: 'none' }, 0);
  }

  /** One piece of feedback, once it is stored. */
  count(kind: FeedbackKind, finding: string | null): void {
    this.given.inc({ kind, finding: finding ?? 'none' });
  }
}
