import type { Page } from '../platform/cursor.js';
import type { AuditExportLine, AuditPageBody, AuditRecordBody } from './schemas.js';
import type { AuditView } from './service.js';

/** A record as the API shows it. */
export const presentAuditRecord = (r: AuditView): AuditRecordBody => ({
  id: r.id,
  at: r.at.toISOString(),
  actor: { type: r.actor.type, id: r.actor.id, label: r.actor.label },
  action: r.action,
  resource_type: r.resourceType,
  resource_id: r.resourceId,
  request_id: r.requestId,
  client_address: r.clientAddress,
  before: r.before,
  after: r.after,
});

export const presentAuditPage = (page: Page<AuditView>): AuditPageBody => ({
  data: page.items.map(presentAuditRecord),
  next_cursor: page.nextCursor,
});

/** A line of the export: the API's shape and the record's account. */
export const presentAuditExportLine = (r: AuditView): AuditExportLine => {
  const { id, ...rest } = presentAuditRecord(r);
  return { id, account_id: r.accountId, ...rest };
};
