import type { ImpactBody } from './schemas.js';

/** The public impact numbers at one moment, as the service reads them (domain object: camelCase, a Date). */
export interface ImpactCounts {
  generatedAt: Date;
  assessments: { total: number; last24h: number };
  tokenScans: { total: number; last24h: number };
  preflights: { total: number; blocked: number; warned: number };
  highRiskFindings: { total: number };
  watchlists: { targetsMonitored: number; alertsDelivered: number };
  chains: string[];
}

/** The counts as the body of `GET /api/public/impact` (snake_case, ISO time). */
export const presentImpact = (c: ImpactCounts): ImpactBody => ({
  generated_at: c.generatedAt.toISOString(),
  assessments: { total: c.assessments.total, last_24h: c.assessments.last24h },
  token_scans: { total: c.tokenScans.total, last_24h: c.tokenScans.last24h },
  preflights: c.preflights,
  high_risk_findings: c.highRiskFindings,
  watchlists: {
    targets_monitored: c.watchlists.targetsMonitored,
    alerts_delivered: c.watchlists.alertsDelivered,
  },
  chains: c.chains,
});
