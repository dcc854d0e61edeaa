import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Abi, Hex } from 'viem';

/*
 * The Solidity test contracts (test/support/evm/contracts/*.sol), compiled with the `solc` npm package
 * (solc-js: the real compiler built to WebAssembly, no native binary), OpenZeppelin imports read from
 * node_modules. Compiling takes seconds, so the output is cached on disk under
 * node_modules/.cache/riskwatch-solc/, keyed by everything that decides it; a later run (or another
 * vitest worker) only reads a JSON file.
 */

export interface CompiledContract {
  readonly abi: Abi;
  /** Init code (what a deployment transaction carries before its ABI-encoded constructor arguments). */
  readonly bytecode: Hex;
  /** Runtime code (what `eth_getCode` shows once deployed, immutables aside). */
  readonly deployedBytecode: Hex;
}

/** By contract name (`PermitToken`, `Collectible`, `Swap`, `Router`): only the contracts of our own files. */
export type CompiledContracts = Readonly<Record<string, CompiledContract>>;

/**
 * `prague` (not the compiler's newer default, `osaka`, whose code may use opcodes such as CLZ): the
 * hardfork startAnvil() runs by default.
 */
export const SOLC_EVM_VERSION = 'prague';

const SETTINGS = {
  optimizer: { enabled: true, runs: 200 },
  evmVersion: SOLC_EVM_VERSION,
  outputSelection: { '*': { '*': ['abi', 'evm.bytecode.object', 'evm.deployedBytecode.object'] } },
} as const;

const CACHE_FORMAT = 1;

/**
 * The folder holding the project's package.json, found by walking up from this module: the same from
 * test/support/evm/solidity.ts (vitest) and from dist/test/support/evm/solidity.js (the build, which does
 * not copy the .sol files).
 */
export function projectRoot(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const pkg = join(dir, 'package.json');
    if (
      existsSync(pkg) &&
      (JSON.parse(readFileSync(pkg, 'utf8')) as { name?: string }).name === 'riskwatch'
    ) {
      return dir;
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`no riskwatch package.json above ${fileURLToPath(import.meta.url)}`);
    dir = parent;
  }
}

/** Where the .sol sources are. */
export function contractsDir(): string {
  return join(projectRoot(), 'test', 'support', 'evm', 'contracts');
}

/** Where compiled output is cached: node_modules/.cache/riskwatch-solc (one JSON file per cache key). */
export function solcCacheDir(): string {
  return join(projectRoot(), 'node_modules', '.cache', 'riskwatch-solc');
}

function sha256(text: string): string {
  return createHash('sha256').update(text).digest('hex');
}

/** A file under the nearest node_modules that has it (`@openzeppelin/contracts/token/ERC20/ERC20.sol`). */
function readPackageFile(root: string, path: string): string | undefined {
  for (let dir = root; ; dir = dirname(dir)) {
    const file = join(dir, 'node_modules', path);
    if (existsSync(file)) return readFileSync(file, 'utf8');
    if (dirname(dir) === dir) return undefined;
  }
}

/**
 * The npm packages our sources import (`@openzeppelin/contracts`), with their versions: part of the cache
 * key, since the imported files themselves are only known once solc has asked for them.
 */
function importedPackages(root: string, sources: Record<string, string>): Record<string, string> {
  const packages: Record<string, string> = {};
  for (const text of Object.values(sources)) {
    for (const m of text.matchAll(/^\s*import\s[^;]*?["']([^"']+)["']/gm)) {
      const path = m[1] ?? '';
      if (path.startsWith('.')) continue;
      const parts = path.split('/');
      const name = path.startsWith('@') ? parts.slice(0, 2).join('/') : (parts[0] ?? '');
      const pkg = readPackageFile(root, `${name}/package.json`);
      packages[name] = pkg ? ((JSON.parse(pkg) as { version?: string }).version ?? '?') : 'missing';
    }
  }
  return packages;
}

/** The parts of solc-js used here (its own typings say `any`). */
interface Solc {
  version(): string;
  compile(
    input: string,
    callbacks: { import(path: string): { contents: string } | { error: string } },
  ): string;
}

interface SolcOutput {
  errors?: { severity: 'error' | 'warning' | 'info'; formattedMessage: string }[];
  contracts?: Record<
    string,
    Record<string, { abi: Abi; evm: { bytecode: { object: string }; deployedBytecode: { object: string } } }>
  >;
}

function solcPackageVersion(): string {
  const require = createRequire(import.meta.url);
  return (require('solc/package.json') as { version: string }).version;
}

function runSolc(root: string, sources: Record<string, string>): CompiledContracts {
  const require = createRequire(import.meta.url);
  // Loading the WebAssembly compiler alone takes a moment: only on a cache miss.
  const solc = require('solc') as Solc;
  const input = {
    language: 'Solidity',
    sources: Object.fromEntries(Object.entries(sources).map(([name, content]) => [name, { content }])),
    settings: SETTINGS,
  };
  const output = JSON.parse(
    solc.compile(JSON.stringify(input), {
      import: (path) => {
        const contents = readPackageFile(root, path);
        return contents === undefined ? { error: `not found under node_modules: ${path}` } : { contents };
      },
    }),
  ) as SolcOutput;
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) {
    throw new Error(`solc ${solc.version()} failed:\n${errors.map((e) => e.formattedMessage).join('\n')}`);
  }
  const contracts: Record<string, CompiledContract> = {};
  for (const file of Object.keys(sources)) {
    for (const [name, c] of Object.entries(output.contracts?.[file] ?? {})) {
      if (contracts[name]) throw new Error(`two contracts named ${name} in ${contractsDir()}`);
      contracts[name] = {
        abi: c.abi,
        bytecode: `0x${c.evm.bytecode.object}`,
        deployedBytecode: `0x${c.evm.deployedBytecode.object}`,
      };
    }
  }
  return contracts;
}

let memo: { key: string; contracts: CompiledContracts } | undefined;

/**
 * Compile every .sol file of test/support/evm/contracts (optimizer on, EVM version prague), or read the
 * result cached by an earlier run. The cache key is a sha256 of the solc version, the settings, our
 * sources and the versions of the packages they import; a changed source is simply compiled again.
 * Throws on any compiler error (warnings are accepted).
 */
export function compileContracts(): Promise<CompiledContracts> {
  // Synchronous underneath (solc-js is); a promise so that the API may move the work elsewhere later.
  return Promise.resolve().then(() => {
    const root = projectRoot();
    const dir = contractsDir();
    const sources: Record<string, string> = {};
    for (const file of readdirSync(dir)
      .filter((f) => f.endsWith('.sol'))
      .sort()) {
      sources[file] = readFileSync(join(dir, file), 'utf8');
    }
    if (Object.keys(sources).length === 0) throw new Error(`no .sol files in ${dir}`);

    const key = sha256(
      JSON.stringify({
        format: CACHE_FORMAT,
        solc: solcPackageVersion(),
        settings: SETTINGS,
        sources,
        packages: importedPackages(root, sources),
      }),
    );
    if (memo?.key === key) return memo.contracts;

    const cacheDir = solcCacheDir();
    const cacheFile = join(cacheDir, `${key}.json`);
    let contracts: CompiledContracts | undefined;
    try {
      contracts = JSON.parse(readFileSync(cacheFile, 'utf8')) as CompiledContracts;
    } catch {
      // not cached yet (or unreadable): compile
    }
    if (!contracts) {
      contracts = runSolc(root, sources);
      // Write-then-rename: a parallel worker never reads half a file.
      mkdirSync(cacheDir, { recursive: true });
      const tmp = `${cacheFile}.${process.pid}.tmp`;
      try {
        writeFileSync(tmp, JSON.stringify(contracts));
        renameSync(tmp, cacheFile);
      } catch {
        rmSync(tmp, { force: true }); // a read-only node_modules only costs the next run a compile
      }
    }
    memo = { key, contracts };
    return contracts;
  });
}
