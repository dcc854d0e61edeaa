import type { EntityManager } from '@mikro-orm/postgresql';
import type { Orm } from '../db/orm.js';
import { DeliveryRows } from './repository/deliveries.js';
import { EndpointRows } from './repository/endpoints.js';

/*
 * Webhooks' three tables (webhook_endpoints, webhook_deliveries, webhook_attempts) behind one repository:
 * every statement of the feature is in repository/, and the services (endpoints.ts, deliveries.ts for the
 * API; fan-out.ts, delivery.ts and secret-store.ts for the workers) hold the rules. A delivery's event is
 * read from the event log's table (src/events), below webhooks.
 */
export class WebhookRepository {
  readonly endpoints: EndpointRows;
  readonly deliveries: DeliveryRows;

  constructor(private readonly orm: Orm) {
    this.endpoints = new EndpointRows(orm);
    this.deliveries = new DeliveryRows(orm);
  }

  /** Runs `fn` in a transaction of its own. */
  transactional<T>(fn: (em: EntityManager) => Promise<T>): Promise<T> {
    return this.orm.em.fork().transactional(fn);
  }
}
