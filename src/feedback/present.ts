import type { Page } from '../platform/cursor.js';
import { displayAddress } from '../lists/addresses.js';
import type { FeedbackBody, FeedbackPageBody } from './schemas.js';
import type { FeedbackView } from './service.js';

/** Feedback as the API shows it: EVM targets in EIP-55 form. */
export const presentFeedback = (f: FeedbackView): FeedbackBody => ({
  id: f.id,
  kind: f.kind,
  target: displayAddress(f.target),
  chain: f.chain,
  network: f.network,
  request_id: f.requestId,
  usage_id: f.usageId,
  endpoint: f.endpoint,
  finding_code: f.findingCode as FeedbackBody['finding_code'],
  note: f.note,
  applied: f.applied && { list: f.applied.list, entry_id: f.applied.entryId, created: f.applied.created },
  created_at: f.createdAt.toISOString(),
  created_by: f.createdBy,
});

export const presentFeedbackPage = (page: Page<FeedbackView>): FeedbackPageBody => ({
  data: page.items.map(presentFeedback),
  next_cursor: page.nextCursor,
});
