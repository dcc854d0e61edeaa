import type { Page } from '../platform/cursor.js';
import { displayAddress } from './addresses.js';
import type { ListEntry } from './entities.js';
import type {
  ListEntryBody,
  ListEntryPageBody,
  SanctionMatchBody,
  SanctionsImportBody,
  SanctionsSourceBody,
} from './schemas.js';
import type { SanctionMatch, SanctionsImport, SanctionsSource } from './service.js';

/** An entry as the API shows it: EVM targets in EIP-55 form. */
export const presentListEntry = (e: ListEntry): ListEntryBody => ({
  id: e.id,
  list: e.list,
  target: displayAddress(e.target),
  chain: e.chain ?? null,
  label: e.label ?? null,
  reason: e.reason ?? null,
  created_at: e.createdAt.toISOString(),
  created_by: e.createdBy,
});

export const presentListEntryPage = (page: Page<ListEntry>): ListEntryPageBody => ({
  data: page.items.map(presentListEntry),
  next_cursor: page.nextCursor,
});

export const presentSanctionMatch = (m: SanctionMatch): SanctionMatchBody => ({
  source: m.source,
  currency: m.currency,
  name: m.name,
  uid: m.uid,
  list_as_of: m.listAsOf,
});

export const presentSanctionsImport = (r: SanctionsImport): SanctionsImportBody => ({
  source: r.source,
  list_as_of: r.listAsOf,
  total: r.total,
  added: r.added,
  removed: r.removed,
  by_currency: Object.fromEntries(r.byCurrency),
});

export const presentSanctionsSource = (s: SanctionsSource): SanctionsSourceBody => ({
  source: s.source,
  list_as_of: s.listAsOf,
  imported_at: s.importedAt.toISOString(),
  total: s.total,
  by_currency: Object.fromEntries(s.byCurrency),
});
