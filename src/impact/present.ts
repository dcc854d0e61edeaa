import type { ImpactBody } from './schemas.js';
import type { ImpactCounts } from './service.js';

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
