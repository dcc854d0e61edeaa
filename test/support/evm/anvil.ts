import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';

/**
 * The mnemonic anvil uses by default, passed explicitly so the dev accounts (and so every address the
 * fixtures derive from them: deployed contracts, proxies) are the same on every run and machine.
 */
export const ANVIL_MNEMONIC = 'test test test test test test test test test test test junk';

/** Chain id 1 by default: the service is configured for "ethereum mainnet" and should not need a test id. */
export const ANVIL_DEFAULT_CHAIN_ID = 1;

export interface AnvilOptions {
  /** Default 1 (see ANVIL_DEFAULT_CHAIN_ID). */
  chainId?: number;
  /** Default 0: an ephemeral port. */
  port?: number;
  /** Default `prague`: the first hardfork with EIP-7702 (set-code transactions). */
  hardfork?: string;
  mnemonic?: string;
  /** Number of funded dev accounts; default 10. */
  accounts?: number;
  /** Balance of each dev account in ether; default 10000. */
  balanceEth?: number;
  /** Appended verbatim (e.g. `['--block-time', '1']`). */
  extraArgs?: readonly string[];
  /** How long anvil may take to listen before startAnvil fails; default 15 s. */
  startTimeoutMs?: number;
}

export interface AnvilDevAccount {
  readonly address: `0x${string}`;
  readonly privateKey: `0x${string}`;
}

export interface RunningAnvil {
  /** `http://127.0.0.1:PORT` — JSON-RPC over HTTP. */
  readonly url: string;
  readonly port: number;
  readonly chainId: number;
  /** The funded dev accounts as anvil reported them (from `--config-out`), index 0 first. */
  readonly accounts: readonly AnvilDevAccount[];
  readonly pid: number;
  /** The last 64 KiB of anvil's stdout+stderr (it is never echoed: tests stay quiet). */
  output(): string;
  /** SIGTERM, then SIGKILL after 3 s; resolves once the process is gone. Idempotent. */
  stop(): Promise<void>;
}

type AnvilChild = ChildProcessByStdio<null, Readable, Readable>;

const OUTPUT_CAP = 64 * 1024;

/** Children still running, killed synchronously if the test process exits without calling stop(). */
const live = new Set<AnvilChild>();
let exitHooksInstalled = false;

function killAllSync(): void {
  for (const child of live) {
    try {
      child.kill('SIGKILL');
    } catch {
      // already gone
    }
  }
  live.clear();
}

function installExitHooks(): void {
  if (exitHooksInstalled) return;
  exitHooksInstalled = true;
  // 'exit' handlers may only do synchronous work: kill() is synchronous, waiting is not needed.
  process.once('exit', killAllSync);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = (): void => {
      killAllSync();
      process.off(signal, onSignal);
      // Adding a listener suppressed Node's default "die on signal"; if nobody else handles it (vitest
      // may), re-raise so the process still terminates the way it would have without us.
      if (process.listenerCount(signal) === 0) process.kill(process.pid, signal);
    };
    process.on(signal, onSignal);
  }
}

/**
 * The anvil executable shipped inside the platform package (`@foundry-rs/anvil-linux-amd64` here). The
 * `@foundry-rs/anvil` wrapper's `bin.mjs` would add a Node process in between, which would swallow our
 * kill signal; its postinstall download fallback is never needed because the binary is in the tarball.
 * `ANVIL_BIN` overrides, for a machine with anvil installed some other way.
 */
export function anvilBinaryPath(): string {
  const override = process.env.ANVIL_BIN;
  if (override) return override;
  // The platform packages say amd64 where Node says x64 (same mapping as the wrapper's const.mjs).
  const archs: Record<string, string> = { x64: 'amd64', arm64: 'arm64' };
  const arch = archs[process.arch];
  if (!arch || !['linux', 'darwin', 'win32'].includes(process.platform)) {
    throw new Error(`no @foundry-rs/anvil binary for ${process.platform}/${process.arch}; set ANVIL_BIN`);
  }
  const pkg = `@foundry-rs/anvil-${process.platform}-${arch}`;
  const exe = process.platform === 'win32' ? 'anvil.exe' : 'anvil';
  const require = createRequire(import.meta.url);
  try {
    return require.resolve(`${pkg}/bin/${exe}`);
  } catch (err) {
    throw new Error(
      `${pkg} is not installed (npm ci installs it as an optional dependency of @foundry-rs/anvil)`,
      {
        cause: err,
      },
    );
  }
}

/**
 * Start a real anvil node on a free loopback port. `--port 0` lets the kernel choose (no race between
 * picking a port and binding it); anvil prints `Listening on 127.0.0.1:PORT`, which is parsed. Fails
 * with anvil's own output if it exits or does not answer JSON-RPC within the start timeout.
 */
export async function startAnvil(opts: AnvilOptions = {}): Promise<RunningAnvil> {
  const chainId = opts.chainId ?? ANVIL_DEFAULT_CHAIN_ID;
  const timeoutMs = opts.startTimeoutMs ?? 15_000;
  const dir = mkdtempSync(join(tmpdir(), 'riskwatch-anvil-'));
  const configOut = join(dir, 'config.json');
  const args = [
    '--host',
    '127.0.0.1',
    '--port',
    String(opts.port ?? 0),
    '--hardfork',
    opts.hardfork ?? 'prague',
    '--chain-id',
    String(chainId),
    '--mnemonic',
    opts.mnemonic ?? ANVIL_MNEMONIC,
    '--accounts',
    String(opts.accounts ?? 10),
    '--balance',
    String(opts.balanceEth ?? 10_000),
    // Written at start-up with the dev accounts and their keys: read instead of re-deriving them.
    '--config-out',
    configOut,
    '--color',
    'never',
    ...(opts.extraArgs ?? []),
  ];

  installExitHooks();
  const child: AnvilChild = spawn(anvilBinaryPath(), args, { stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);

  // Not `--quiet`: the listening line is how the port is learned. The log is kept (bounded) for error
  // messages, never printed; both pipes must keep being drained or anvil would block on a full pipe.
  let out = '';
  const append = (d: Buffer): void => {
    out += d.toString();
    if (out.length > OUTPUT_CAP * 2) out = out.slice(-OUTPUT_CAP);
  };
  child.stdout.on('data', append);
  child.stderr.on('data', append);
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      live.delete(child);
      resolve();
    });
  });
  let spawnError: Error | undefined;
  child.once('error', (err) => (spawnError = err));

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 3_000);
        await exited;
        clearTimeout(timer);
      }
      rmSync(dir, { recursive: true, force: true });
    })();
    return stopping;
  };
  const fail = async (why: string): Promise<never> => {
    await stop();
    throw new Error(`anvil ${why}\n--- anvil ${args.join(' ')} ---\n${out.slice(-OUTPUT_CAP)}`, {
      cause: spawnError,
    });
  };

  const deadline = Date.now() + timeoutMs;
  let port: number | undefined;
  while (port === undefined) {
    if (spawnError) return fail(`could not be spawned: ${spawnError.message}`);
    if (child.exitCode !== null || child.signalCode !== null) {
      return fail(`exited early (${child.exitCode ?? child.signalCode})`);
    }
    const m = /Listening on 127\.0\.0\.1:(\d+)/.exec(out);
    if (m?.[1]) port = Number(m[1]);
    else if (Date.now() > deadline) return fail(`did not listen within ${timeoutMs} ms`);
    else await new Promise((r) => setTimeout(r, 25));
  }
  const url = `http://127.0.0.1:${port}`;

  // Listening is printed after the bind; one real call proves the RPC answers and runs the chain asked for.
  for (;;) {
    try {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'eth_chainId', params: [] }),
        signal: AbortSignal.timeout(Math.max(100, deadline - Date.now())),
      });
      const body = (await res.json()) as { result?: string };
      if (body.result !== `0x${chainId.toString(16)}`) return fail(`answered eth_chainId ${body.result}`);
      break;
    } catch (err) {
      if (Date.now() > deadline)
        return fail(`did not answer JSON-RPC within ${timeoutMs} ms: ${String(err)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  let config: { available_accounts: `0x${string}`[]; private_keys: `0x${string}`[] };
  try {
    config = JSON.parse(readFileSync(configOut, 'utf8')) as typeof config;
  } catch (err) {
    return fail(`wrote no readable --config-out (${String(err)})`);
  }
  const accounts: AnvilDevAccount[] = [];
  for (const [i, address] of config.available_accounts.entries()) {
    const privateKey = config.private_keys[i];
    if (!privateKey) return fail(`--config-out lists no key for account ${i}`);
    accounts.push({ address, privateKey });
  }

  return {
    url,
    port,
    chainId,
    accounts,
    pid: child.pid ?? -1,
    output: () => out.slice(-OUTPUT_CAP),
    stop,
  };
}
