import type { MigrationObject } from '@mikro-orm/core';
import { Migration20261122021342 } from './Migration20261122021342.js';
import { Migration20261122032808 } from './Migration20261122032808.js';
import { Migration20261124005653 } from './Migration20261124005653.js';
import { Migration20261124013104 } from './Migration20261124013104.js';
import { Migration20261124034559 } from './Migration20261124034559.js';
import { Migration20261125220000 } from './Migration20261125220000.js';
import { Migration20261125230000 } from './Migration20261125230000.js';
import { Migration20261128002845 } from './Migration20261128002845.js';
import { Migration20261128024154 } from './Migration20261128024154.js';
import { Migration20261128120000 } from './Migration20261128120000.js';
import { Migration20261128130000 } from './Migration20261128130000.js';
import { Migration20261128140000 } from './Migration20261128140000.js';

/** Every committed migration, oldest first. Add each new one here. */
export const migrations: MigrationObject[] = [
  { name: 'Migration20261122021342', class: Migration20261122021342 },
  { name: 'Migration20261122032808', class: Migration20261122032808 },
  { name: 'Migration20261124005653', class: Migration20261124005653 },
  { name: 'Migration20261124013104', class: Migration20261124013104 },
  { name: 'Migration20261124034559', class: Migration20261124034559 },
  { name: 'Migration20261125220000', class: Migration20261125220000 },
  { name: 'Migration20261125230000', class: Migration20261125230000 },
  { name: 'Migration20261128002845', class: Migration20261128002845 },
  { name: 'Migration20261128024154', class: Migration20261128024154 },
  { name: 'Migration20261128120000', class: Migration20261128120000 },
  { name: 'Migration20261128130000', class: Migration20261128130000 },
  { name: 'Migration20261128140000', class: Migration20261128140000 },
];
