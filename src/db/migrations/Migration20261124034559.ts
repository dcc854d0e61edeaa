import { Migration } from '@mikro-orm/migrations';

/**
 * Lower bounds (ms) of the latency histogram's bins, but the first (0): `width_bucket` then gives the bin,
 * 0-based. The same bounds as HIST_LOWER_BOUNDS in src/usage/rollups.ts (an e2e test compares them).
 */
const HIST_THRESHOLDS =
  '1,2,3,4,5,6,7,8,9,10,12,14,17,21,25,30,36,43,52,62,74,89,107,128,154,185,222,266,319,383,460,552,662,795,' +
  '954,1145,1374,1648,1978,2374,2849,3418,4102,4922,5907,7088,8506,10207,12248,14698,17637,21165,25398,' +
  '30477,36573,43887,52665,60000';
const HIST_BINS = HIST_THRESHOLDS.split(',').length + 1;

/**
 * Adds the calls of `source` (rows with account_id, at, endpoint, status, api_key_id, latency_ms) to the
 * hour and day rollups: counted per (hour, endpoint, status, key, latency bin) first, then per every
 * subset of endpoint/status/key (the cube; `dims` = which are concrete: 1 endpoint, 2 status, 4 key;
 * the others hold '' / 0), then one histogram per rollup row. Rows are upserted in primary-key order so
 * concurrent drains lock them in the same order (no deadlock).
 */
export const usageRollupSql = (source: string) => `
  insert into usage_rollups as r
    (account_id, grain, dims, start, endpoint, status, api_key_id, calls, latency_ms_sum, latency_ms_max, latency_hist)
  select account_id, grain, dims, start, endpoint, status, api_key_id,
         sum(n), sum(s), max(mx), usage_hist_of(array_agg(bin), array_agg(n))
    from (
      select f.account_id, g.grain, g.start, f.bin,
             7 - grouping(f.api_key_id, f.status, f.endpoint) as dims,
             coalesce(f.endpoint, '') as endpoint, coalesce(f.status, 0) as status,
             coalesce(f.api_key_id, '') as api_key_id,
             sum(f.n)::bigint as n, sum(f.s)::bigint as s, max(f.mx) as mx
        from (
          select account_id, date_trunc('hour', at, 'UTC') as hour, endpoint, status, api_key_id,
                 usage_hist_bin(latency_ms) as bin, count(*) as n, sum(latency_ms) as s, max(latency_ms) as mx
            from ${source}
           group by 1, 2, 3, 4, 5, 6
        ) f
        cross join lateral (values ('hour', f.hour), ('day', date_trunc('day', f.hour, 'UTC'))) g(grain, start)
       group by f.account_id, g.grain, g.start, f.bin, cube(f.endpoint, f.status, f.api_key_id)
    ) c
   group by account_id, grain, dims, start, endpoint, status, api_key_id
   order by account_id, grain, dims, start, endpoint, status, api_key_id
  on conflict (account_id, grain, dims, start, endpoint, status, api_key_id) do update
     set calls = r.calls + excluded.calls,
         latency_ms_sum = r.latency_ms_sum + excluded.latency_ms_sum,
         latency_ms_max = greatest(r.latency_ms_max, excluded.latency_ms_max),
         latency_hist = usage_hist_add(r.latency_hist, excluded.latency_hist)`;

/**
 * Builds the rollups of every stored call (what the migration does; the usage bench seeds with it too).
 * Run only against empty rollups, or it counts the calls twice.
 */
export const USAGE_ROLLUP_BACKFILL = usageRollupSql('usage_records');

export class Migration20261124034559 extends Migration {

  override name = 'Migration20261124034559';

  override up(): void | Promise<void> {
    this.addSql(`create table "usage_rollups" ("account_id" varchar(40) not null, "grain" text not null, "dims" smallint not null, "start" timestamptz not null, "endpoint" varchar(200) not null, "status" smallint not null, "api_key_id" varchar(40) not null, "calls" bigint not null, "latency_ms_sum" bigint not null, "latency_ms_max" int not null, "latency_hist" int[] not null, primary key ("account_id", "grain", "dims", "start", "endpoint", "status", "api_key_id"));`);

    this.addSql(`create index "usage_records_account_id_status_at_id_index" on "usage_records" ("account_id", "status", "at", "id");`);
    this.addSql(`create index "usage_records_account_id_endpoint_at_id_index" on "usage_records" ("account_id", "endpoint", "at", "id");`);
    this.addSql(`create index "usage_records_account_id_api_key_id_at_id_index" on "usage_records" ("account_id", "api_key_id", "at", "id");`);

    this.addSql(`alter table "usage_rollups" add constraint "usage_rollups_grain_check" check ("grain" in ('hour', 'day'));`);

    // The usage endpoint's statements read a few hundred rows through indexes; the planner's estimates
    // could still pick a parallel plan, whose workers take longer to start than the whole answer (measured:
    // 6 ms for a 0.3 ms statement, a tenth of the answers per second under load).
    this.addSql(`alter table "usage_rollups" set (parallel_workers = 0);`);
    this.addSql(`alter table "usage_records" set (parallel_workers = 0);`);

    this.addSql(`create function usage_hist_bin(ms int) returns int language sql immutable strict parallel safe
      return width_bucket(ms, '{${HIST_THRESHOLDS}}'::int[]);`);
    // A histogram (int[${HIST_BINS}]) from parallel arrays of bins and counts.
    this.addSql(`create function usage_hist_of(bins int[], counts bigint[]) returns int[] language plpgsql immutable parallel safe as $$
      declare h int[] := array_fill(0, array[${HIST_BINS}]);
      begin
        for i in 1 .. coalesce(array_length(bins, 1), 0) loop
          h[bins[i] + 1] := h[bins[i] + 1] + counts[i];
        end loop;
        return h;
      end $$;`);
    this.addSql(`create function usage_hist_add(a int[], b int[]) returns int[] language plpgsql immutable parallel safe as $$
      declare h int[] := a;
      begin
        for i in 1 .. ${HIST_BINS} loop
          h[i] := h[i] + b[i];
        end loop;
        return h;
      end $$;`);

    // The rollups follow every insert into usage_records, in the inserting statement: whichever code
    // inserts (the drain, an older worker during a rolling upgrade, an operator's fix-up), only the rows
    // actually inserted are counted (a replayed batch's "on conflict (id) do nothing" rows are not in
    // the transition table), and a call and its counts commit together.
    this.addSql(`create function usage_records_roll_up() returns trigger language plpgsql as $$
      begin
        ${usageRollupSql('inserted')};
        return null;
      end $$;`);
    // Creating the trigger waits for inserts in flight and holds later ones until this migration commits,
    // so the backfill below counts every call stored before the trigger, and the trigger every call after.
    this.addSql(`create trigger usage_records_roll_up after insert on usage_records
      referencing new table as inserted for each statement execute function usage_records_roll_up();`);
    this.addSql(USAGE_ROLLUP_BACKFILL);
  }

  override down(): void | Promise<void> {
    this.addSql(`alter table "usage_records" reset (parallel_workers);`);
    this.addSql(`drop trigger if exists usage_records_roll_up on usage_records;`);
    this.addSql(`drop function if exists usage_records_roll_up();`);
    this.addSql(`drop table if exists "usage_rollups" cascade;`);
    this.addSql(`drop function if exists usage_hist_add(int[], int[]);`);
    this.addSql(`drop function if exists usage_hist_of(int[], bigint[]);`);
    this.addSql(`drop function if exists usage_hist_bin(int);`);

    this.addSql(`drop index "usage_records_account_id_status_at_id_index";`);
    this.addSql(`drop index "usage_records_account_id_endpoint_at_id_index";`);
    this.addSql(`drop index "usage_records_account_id_api_key_id_at_id_index";`);
  }

}
