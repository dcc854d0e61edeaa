import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

/**
 * One digital-currency address of an imported sanctions list (OFAC SDN or an operator's CSV). The address
 * is normalised chain-agnostically (see `normaliseAddress`), so a lookup needs no chain. An import replaces
 * every row of its `source` at once, so the table always holds exactly what the latest file listed.
 */
export const SanctionedAddressSchema = defineEntity({
  name: 'SanctionedAddress',
  tableName: 'sanctioned_addresses',
  indexes: [{ properties: ['address'] }],
  properties: {
    source: p.string().length(100).primary(),
    /** The list's currency label: OFAC's text after "Digital Currency Address - " (ETH, XBT, SOL, USDT…). */
    currency: p.string().length(20).primary(),
    address: p.string().length(200).primary(),
    /** The listed party: the SDN entry's primary name, and its uid (OFAC's FixedRef / ent_num). */
    entityName: p.string().length(500),
    entityUid: p.string().length(100).nullable(),
    /** The list's publication date (the SDN file's DateOfIssue, or --as-of). */
    listAsOf: p.date(),
    importedAt: p.datetime(),
  },
});
export type SanctionedAddress = InferEntity<typeof SanctionedAddressSchema>;

export const LIST_NAMES = ['deny', 'allow'] as const;
export type ListName = (typeof LIST_NAMES)[number];

/**
 * An entry of an account's deny or allow list. `chain` null means every chain; `target` is normalised
 * (EVM lower case). One entry per (account, list, chain, target), "any chain" included: the unique index
 * treats NULLs as equal (PostgreSQL 15+), which MikroORM cannot declare, hence the raw expression.
 */
export const ListEntrySchema = defineEntity({
  name: 'ListEntry',
  tableName: 'list_entries',
  uniques: [
    {
      name: 'list_entries_account_id_list_chain_target_unique',
      expression:
        'create unique index "list_entries_account_id_list_chain_target_unique" on "list_entries" ("account_id", "list", "chain", "target") nulls not distinct',
    },
  ],
  indexes: [
    { properties: ['accountId', 'list', 'createdAt', 'id'] },
    { properties: ['accountId', 'target'] },
  ],
  properties: {
    id: p.string().length(40).primary(),
    accountId: p.string().length(40),
    list: p.enum(LIST_NAMES),
    chain: p.string().length(40).nullable(),
    target: p.string().length(200),
    label: p.string().length(200).nullable(),
    reason: p.string().length(1000).nullable(),
    createdAt: p.datetime().onCreate(() => new Date()),
    createdBy: p.string().length(300),
  },
});
export type ListEntry = InferEntity<typeof ListEntrySchema>;
