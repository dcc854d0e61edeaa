/** What the caller says the target is (risk-v2 `target_type`): a leaf, so the schemas and the domain types share it. */
export const TARGET_TYPES = ['wallet', 'contract', 'program', 'token'] as const;
export type TargetType = (typeof TARGET_TYPES)[number];
