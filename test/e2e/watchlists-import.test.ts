import { getAddressDecoder } from '@solana/kit';
import { execFile } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { createWriteStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { connectDatabase as connectOrm } from '../../src/database.js';
import type { Orm } from '../../src/db/orm.js';
import { operatorActor } from '../../src/audit/actor.js';
import { PROJECT_ROOT } from '../../src/platform/paths.js';
import type { ImportSummaryBody } from '../../src/watchlists/schemas.js';
import type { WatchlistsService } from '../../src/watchlists/lists.js';
import { watchlistServices } from '../support/watchlist-services.js';
import { openAccounts, type Customer } from '../support/auth-helpers.js';
import { freePort, prepareEnv, type TestEnv } from '../support/service.js';

/*
 * `riskwatch watchlists import ACCOUNT WATCHLIST FILE.csv` (the built CLI): a 100,000-row file streamed in
 * batches through the same bulk add as the API, its progress on stderr, its summary on stdout.
 */

const MAIN = join(PROJECT_ROOT, 'dist', 'src', 'main.js');
/** Who creates this test's lists (through the service, not the API). */
const OPERATOR = operatorActor('watchlists-import-test');

interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
  ms: number;
}

/**
 * Loaded before the CLI by `runCli(..., { maxRss: true })`: prints the process's peak resident set size
 * (`process.resourceUsage().maxRSS`, KiB) as the last line of stderr, however the process exits.
 */
const PRINT_MAX_RSS =
  'data:text/javascript,' +
  encodeURIComponent(
    "import { writeSync } from 'node:fs';" +
      "process.on('exit', () => writeSync(2, `max_rss_kib=${process.resourceUsage().maxRSS}\\n`));",
  );

/** The peak RSS, in MiB, a run with `maxRss` printed on its stderr. */
const maxRssMiB = (stderr: string) => {
  const kib = /^max_rss_kib=(\d+)$/m.exec(stderr)?.[1];
  if (kib === undefined) throw new Error(`no max_rss_kib line in stderr:\n${stderr.slice(-2000)}`);
  return Number(kib) / 1024;
};

/** Runs the built CLI; resolves with its exit code and output whatever the code. */
function runCli(
  env: Record<string, string>,
  args: string[],
  opts: { maxRss?: boolean } = {},
): Promise<CliRun> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...(opts.maxRss ? ['--import', PRINT_MAX_RSS] : []), MAIN, ...args],
      { env: { ...process.env, ...env }, cwd: PROJECT_ROOT, maxBuffer: 64 * 1024 * 1024 },
      (err, stdout, stderr) => {
        const code = err ? (typeof err.code === 'number' ? err.code : -1) : 0;
        resolve({ code, stdout, stderr, ms: performance.now() - started });
      },
    );
  });
}

let evmCounter = 0;
const evmAddress = () =>
  `0x${(++evmCounter).toString(16).padStart(8, '0')}${randomBytes(16).toString('hex')}`;
const solanaAddress = () => getAddressDecoder().decode(randomBytes(32));

describe('riskwatch watchlists import (built CLI)', () => {
  let testEnv: TestEnv;
  let db: Awaited<ReturnType<typeof openAccounts>>;
  let orm: Orm;
  let watchlists: WatchlistsService;
  let sql: pg.Client;
  let acme: Customer;
  let globex: Customer;
  let tmp: string;

  const importFile = async (account: string, watchlist: string, file: string) => {
    const run = await runCli(testEnv.env, ['watchlists', 'import', account, watchlist, file]);
    return { ...run, summary: run.code === 0 ? (JSON.parse(run.stdout) as ImportSummaryBody) : undefined };
  };
  const entryCount = async (watchlistId: string) =>
    Number(
      (
        await sql.query<{ n: string }>(
          'select count(*) as n from watchlist_entries where watchlist_id = $1',
          [watchlistId],
        )
      ).rows[0]!.n,
    );

  beforeAll(async () => {
    tmp = mkdtempSync(join(tmpdir(), 'rw-wl-import-'));
    const unused = `http://127.0.0.1:${await freePort()}`;
    testEnv = await prepareEnv({
      RISKWATCH_RPC_SOLANA_MAINNET: unused,
      RISKWATCH_RPC_ETHEREUM_MAINNET: unused,
      RISKWATCH_RPC_BASE_MAINNET: unused,
    });
    db = await openAccounts(testEnv.env);
    [acme, globex] = await Promise.all([db.customer('acme'), db.customer('globex')]);
    orm = await connectOrm(testEnv.env.DATABASE_URL!, 2);
    watchlists = watchlistServices(orm, 1_000_000).lists;
    sql = new pg.Client({ connectionString: testEnv.env.DATABASE_URL });
    await sql.connect();
  }, 120_000);

  afterAll(async () => {
    await sql?.end();
    await orm?.close();
    await db?.close();
    await testEnv?.dropDatabase();
    if (tmp) rmSync(tmp, { recursive: true, force: true });
  });

  it('imports a 100,000-row file with progress, then reports every row as existing', async () => {
    const file = join(tmp, 'big.csv');
    const out = createWriteStream(file);
    out.write('target,chain,network,label,target_type\n');
    for (let i = 0; i < 100_000; i++) {
      // 60 % EVM (ethereum inferred, every 10th on base), 40 % Solana; labels with commas and quotes.
      const line =
        i % 5 < 3
          ? `${evmAddress()},${i % 10 === 0 ? 'base' : ''},,"customer ${i}, ""vip""",wallet\n`
          : `${solanaAddress()},solana,mainnet,customer ${i},\n`;
      if (!out.write(line)) await once(out, 'drain');
    }
    out.end();
    await once(out, 'finish');

    const list = await watchlists.createWatchlist(acme.account.id, { name: 'big' }, OPERATOR);
    const first = await importFile('acme', list.id, file); // the account by org id
    expect(first.code, first.stderr).toBe(0);
    expect(first.summary).toMatchObject({
      rows: 100_000,
      created: 100_000,
      exists: 0,
      failed: 0,
      errors: [],
    });
    // Not a terminal: a progress line every 10 % of the file or 10,000 rows, and a final one.
    const progress = first.stderr.split('\n').filter((l) => l.startsWith('import: '));
    expect(progress.length).toBeGreaterThanOrEqual(10);
    expect(progress.at(-1)).toMatch(
      /^import: 100,000 rows read \(100%\), created 100,000, exists 0, failed 0, [\d,]+ rows\/s$/,
    );
    expect(await entryCount(list.id)).toBe(100_000);
    const byNetwork = await sql.query<{ chain: string; n: string }>(
      'select chain, count(*) as n from watchlist_entries where watchlist_id = $1 group by chain order by chain',
      [list.id],
    );
    expect(byNetwork.rows.map((r) => [r.chain, Number(r.n)])).toEqual([
      ['base', 10_000],
      ['ethereum', 50_000],
      ['solana', 40_000],
    ]);
    const [labelled] = (
      await sql.query<{ label: string; target_type: string }>(
        `select label, target_type from watchlist_entries where watchlist_id = $1 and label = 'customer 1, "vip"'`,
        [list.id],
      )
    ).rows;
    expect(labelled).toEqual({ label: 'customer 1, "vip"', target_type: 'wallet' });

    const second = await importFile(acme.account.id, list.id, file); // the account by id
    expect(second.code, second.stderr).toBe(0);
    expect(second.summary).toMatchObject({ rows: 100_000, created: 0, exists: 100_000, failed: 0 });
    expect(await entryCount(list.id)).toBe(100_000);
    console.log(
      `watchlists import: 100,000 rows imported in ${(first.ms / 1000).toFixed(1)} s wall ` +
        `(${first.summary!.seconds} s importing), re-imported (all exist) in ${(second.ms / 1000).toFixed(1)} s wall ` +
        `(${second.summary!.seconds} s importing)`,
    );
  }, 300_000);

  it('reports bad rows with their line numbers and imports the others', async () => {
    const good = [evmAddress(), solanaAddress(), evmAddress(), evmAddress()];
    const rows = [
      'Target,Network,Chain,Label', // 1: header (any case, any order)
      `${good[0]},,,first`, // 2: created
      'not-an-address,,,bad', // 3: invalid_address
      `"${good[1]}",,,"two`, // 4-5: a quoted label over two lines: created (its line: 5)
      'lines"',
      `${evmAddress()},,dogechain,`, // 6: unsupported_chain
      '', // 7: empty, skipped
      `${evmAddress()},,polygon,`, // 8: unsupported_chain (known, but no provider configured)
      `${good[0]!.toUpperCase().replace('0X', '0x')},,,again`, // 9: duplicate_in_request
      `${good[2]},,,${'x'.repeat(201)}`, // 10: invalid_request (label over 200 characters)
      `${solanaAddress()},,solana,,`, // 11: a sixth field is tolerated
      ',,,no target', // 12: invalid_address
      `${good[3]}`, // 13: created (missing trailing columns)
    ];
    const file = join(tmp, 'bad-rows.csv');
    writeFileSync(file, rows.join('\n') + '\n');
    const list = await watchlists.createWatchlist(acme.account.id, { name: 'bad rows' }, OPERATOR);
    const res = await importFile('acme', list.id, file);
    expect(res.code, res.stderr).toBe(0);
    expect(res.summary!.errors.map((e) => [e.line, e.code])).toEqual([
      [3, 'invalid_address'],
      [6, 'unsupported_chain'],
      [8, 'unsupported_chain'],
      [9, 'duplicate_in_request'],
      [10, 'invalid_request'],
      [12, 'invalid_address'],
    ]);
    expect(res.summary).toMatchObject({ rows: 10, created: 4, exists: 0, failed: 6 });
    expect(res.summary!.errors[0]).toEqual({
      line: 3,
      target: 'not-an-address',
      code: 'invalid_address',
      message: expect.stringContaining('neither a Solana address') as unknown,
    });
    expect(await entryCount(list.id)).toBe(4);
  });

  it('refuses a file without a target column, an unknown account, and another account’s watchlist', async () => {
    const list = await watchlists.createWatchlist(acme.account.id, { name: 'refusals' }, OPERATOR);
    const noTarget = join(tmp, 'no-target.csv');
    writeFileSync(noTarget, `address,chain\n${evmAddress()},ethereum\n`);
    const bad = await importFile('acme', list.id, noTarget);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/invalid_request: .*header row must name the column target.*unknown: address/);
    expect(bad.stdout).toBe('');

    const empty = join(tmp, 'empty.csv');
    writeFileSync(empty, '');
    expect((await importFile('acme', list.id, empty)).stderr).toContain('is empty');

    const fine = join(tmp, 'fine.csv');
    writeFileSync(fine, `target\n${evmAddress()}\n`);
    const unknownAccount = await importFile('nobody', list.id, fine);
    expect(unknownAccount.code).toBe(1);
    expect(unknownAccount.stderr).toContain('not_found: Account "nobody"');
    const theirs = await importFile(globex.account.id, list.id, fine);
    expect(theirs.code).toBe(1);
    expect(theirs.stderr).toContain(`not_found: Watchlist "${list.id}"`);
    expect((await importFile('acme', list.id, join(tmp, 'missing.csv'))).stderr).toContain('Cannot read');
    expect(await entryCount(list.id)).toBe(0);

    // A CSV syntax error stops the import: the rows before it stay, and the summary says so.
    const broken = join(tmp, 'broken.csv');
    writeFileSync(broken, `target,label\n${evmAddress()},ok\n${evmAddress()},"unclosed\n`);
    const stopped = await runCli(testEnv.env, ['watchlists', 'import', 'acme', list.id, broken]);
    expect(stopped.code).toBe(1);
    expect(JSON.parse(stopped.stdout)).toMatchObject({
      rows: 1,
      created: 1,
      aborted: expect.stringContaining('not valid CSV') as unknown,
    });
    expect(await entryCount(list.id)).toBe(1);
  }, 120_000);

  it('imports a long but legal row, and reports a long field as a failed row, not a stop', async () => {
    const longest = evmAddress();
    // Every column at its longest: a 200-character label of quotes, commas and 4-byte characters.
    const label = `"v,i"p 😀${'é,"'.repeat(64)}`.slice(0, 200);
    const csvLabel = `"${label.replaceAll('"', '""')}"`;
    const rows = [
      'target,chain,network,label,target_type',
      `${longest},ethereum,mainnet,${csvLabel},wallet`, // 2: created
      `${evmAddress()},,,${'x'.repeat(20_000)},`, // 3: a 20,000-character label: a failed row
      `${solanaAddress()},solana,mainnet,after,`, // 4: created
    ];
    const file = join(tmp, 'long-rows.csv');
    writeFileSync(file, rows.join('\n') + '\n');
    const list = await watchlists.createWatchlist(acme.account.id, { name: 'long rows' }, OPERATOR);
    const res = await importFile('acme', list.id, file);
    expect(res.code, res.stderr).toBe(0);
    expect(res.summary).toMatchObject({ rows: 3, created: 2, failed: 1 });
    expect(res.summary!.errors.map((e) => [e.line, e.code])).toEqual([[3, 'invalid_request']]);
    expect(res.summary!.aborted).toBeUndefined();
    const stored = await sql.query<{ label: string; target_type: string }>(
      `select label, target_type from watchlist_entries where watchlist_id = $1 and chain = 'ethereum'`,
      [list.id],
    );
    expect(stored.rows).toEqual([{ label, target_type: 'wallet' }]);
  });

  it('keeps every row before a CSV error mid-file, those parsed with it included', async () => {
    // The error comes in the same 64 KiB chunk as hundreds of rows csv-parse has parsed but not yet
    // handed over: they are imported too, not dropped with the stream.
    const before = 3000;
    let rows = 'target,label\n';
    for (let i = 0; i < before; i++) rows += `${evmAddress()},row ${i}\n`;
    rows += `${evmAddress()},"closed"then more\n`; // line 3002: a character after the closing quote
    for (let i = 0; i < 100; i++) rows += `${evmAddress()},after\n`;
    const file = join(tmp, 'bad-quote.csv');
    writeFileSync(file, rows);
    const list = await watchlists.createWatchlist(acme.account.id, { name: 'bad quote' }, OPERATOR);
    const run = await runCli(testEnv.env, ['watchlists', 'import', 'acme', list.id, file]);
    expect(run.code, run.stderr).toBe(1);
    const summary = JSON.parse(run.stdout) as ImportSummaryBody;
    expect(summary).toMatchObject({ rows: before, created: before, failed: 0 });
    expect(summary.aborted).toContain('Invalid Closing Quote');
    expect(summary.aborted).toContain(`at line ${before + 2}`);
    expect(await entryCount(list.id)).toBe(before);
  });

  it('stops at a record over the size cap (an unclosed quote), naming its line, in bounded memory', async () => {
    // 3,000 rows, an empty line, then a row whose quote never closes: the 100 MiB after it would be one
    // field. Without the cap csv-parse buffers all of it (a peak RSS ~220 MiB over the import's own) and
    // fails at the end of the file.
    const before = 3000;
    const badLine = before + 3; // the header, 3,000 rows, the empty line
    let rows = 'target,label\n';
    for (let i = 0; i < before; i++) rows += `${evmAddress()},row ${i}\n`;
    const good = join(tmp, 'unclosed-quote-before.csv');
    writeFileSync(good, rows);
    const file = join(tmp, 'unclosed-quote.csv');
    const out = createWriteStream(file);
    out.write(`${rows}\n${evmAddress()},"unclosed quote\n`);
    const filler = Buffer.from(`${evmAddress()},swallowed by the open quote\n`.repeat(2000));
    const fileMiB = 100;
    for (let written = 0; written < fileMiB * 1024 * 1024; written += filler.length)
      if (!out.write(filler)) await once(out, 'drain');
    out.end();
    await once(out, 'finish');

    const list = await watchlists.createWatchlist(acme.account.id, { name: 'unclosed quote' }, OPERATOR);
    const run = await runCli(testEnv.env, ['watchlists', 'import', 'acme', list.id, file], { maxRss: true });
    expect(run.code, run.stderr).toBe(1);
    const summary = JSON.parse(run.stdout) as ImportSummaryBody;
    // Every row before the bad one is imported, those csv-parse had parsed but not handed over included.
    expect(summary).toMatchObject({ rows: before, created: before, failed: 0 });
    expect(await entryCount(list.id)).toBe(before);
    const refusal = `${file} is not valid CSV: line ${badLine}: the row is over the 64 KiB limit on a row`;
    expect(summary.aborted).toContain(refusal);
    expect(summary.aborted).toContain(`The import stopped there: the ${before} rows before it were imported`);
    expect(run.stderr).toContain(`invalid_request: ${refusal}`);

    // The peak RSS is that of importing the same rows without the bad one (the CLI's own is ~200 MiB).
    const baselineList = await watchlists.createWatchlist(
      acme.account.id,
      { name: 'unclosed quote, baseline' },
      OPERATOR,
    );
    const baseline = await runCli(testEnv.env, ['watchlists', 'import', 'acme', baselineList.id, good], {
      maxRss: true,
    });
    expect(baseline.code, baseline.stderr).toBe(0);
    const peak = maxRssMiB(run.stderr);
    const base = maxRssMiB(baseline.stderr);
    console.log(
      `watchlists import: a ${fileMiB} MiB file with an unclosed quote refused at a peak RSS of ` +
        `${Math.round(peak)} MiB (${Math.round(base)} MiB importing its ${before} rows alone)`,
    );
    expect(peak - base).toBeLessThan(50);
  }, 120_000);

  it('stops at a line over the cap that is delimiters, not field characters, in bounded memory', async () => {
    // csv-parse's record cap counts the characters of fields, not the commas between them: a line of
    // 40 MiB of commas is millions of empty fields (2.7 GB of RSS at 50 MB before the line cap).
    const before = 3000;
    let rows = 'target,label\n';
    for (let i = 0; i < before; i++) rows += `${evmAddress()},row ${i}\n`;
    const file = join(tmp, 'commas.csv');
    const out = createWriteStream(file);
    out.write(`${rows}${evmAddress()},`);
    const commas = Buffer.alloc(1024 * 1024, ',');
    for (let i = 0; i < 40; i++) if (!out.write(commas)) await once(out, 'drain');
    out.write(`\n${evmAddress()},after\n`);
    out.end();
    await once(out, 'finish');

    const list = await watchlists.createWatchlist(acme.account.id, { name: 'commas' }, OPERATOR);
    const run = await runCli(testEnv.env, ['watchlists', 'import', 'acme', list.id, file], { maxRss: true });
    expect(run.code, run.stderr).toBe(1);
    const summary = JSON.parse(run.stdout) as ImportSummaryBody;
    expect(summary).toMatchObject({ rows: before, created: before, failed: 0 });
    expect(await entryCount(list.id)).toBe(before);
    expect(summary.aborted).toContain(
      `${file} is not valid CSV: line ${before + 2}: the row is over the 64 KiB limit on a row`,
    );
    const peak = maxRssMiB(run.stderr);
    console.log(
      `watchlists import: a 40 MiB line of commas refused at a peak RSS of ${Math.round(peak)} MiB`,
    );
    expect(peak).toBeLessThan(400);
  }, 120_000);
});
