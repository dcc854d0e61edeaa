import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';
import { getMintDecoder, getTokenDecoder } from '@solana-program/token-2022';
import {
  getBase58Decoder,
  getCompiledTransactionMessageDecoder,
  getTransactionDecoder,
  type Address,
  type EncodedAccount,
  type ReadonlyUint8Array,
} from '@solana/kit';
import type { LiteSVM } from 'litesvm';
import {
  epochOfSlot,
  firstSlotOfEpoch,
  TOKEN_2022_PROGRAM,
  TOKEN_PROGRAM,
  TransactionLedger,
  type RecordedTransaction,
} from './chain.js';
import {
  addressParam,
  encodeAccount,
  integerParam,
  invalidParams,
  isRecord,
  RpcError,
} from './rpc-common.js';
import { TransactionSimulator } from './simulate.js';

/*
 * A small Solana JSON-RPC 2.0 server over LiteSVM, shaped like a real node (Agave) for the methods
 * riskwatch reads. Account data is served raw, base64 only: decoding is the service's job. The facade
 * decodes token accounts internally only where a node's own indexes would (largest accounts, by owner).
 * simulateTransaction is simulate.ts (LiteSVM's simulation, never a state change); the blockhashes
 * getLatestBlockhash hands out stay valid for it for 150 slots, as on a node.
 */

const API_VERSION = '2.2.0';
const MAX_MULTIPLE_ACCOUNTS = 100;
const MAX_SIGNATURES_LIMIT = 1000;
const LARGEST_ACCOUNTS = 20;
const MAX_BODY_BYTES = 1 << 20;
const SPL_ACCOUNT_LEN = 165;
const SPL_MULTISIG_LEN = 355;
/** Token-2022's AccountType byte after the 165-byte base: 2 = token account. */
const ACCOUNT_TYPE_ACCOUNT = 2;

export type Fault =
  /** HTTP 429 with `Retry-After: <seconds>`, as providers rate-limit. */
  | { kind: 'http429'; retryAfterSeconds: number }
  | { kind: 'http500' }
  /** Never answer (until the facade closes): the client's deadline must fire. */
  | { kind: 'hang' }
  /** Answer correctly, `ms` late (on top of the latency). */
  | { kind: 'delay'; ms: number }
  /** HTTP 200 claiming JSON: an HTML error page, or the real answer cut in half. */
  | { kind: 'garbage'; variant: 'not-json' | 'truncated' };

interface FaultRule {
  fault: Fault;
  method?: string;
  remaining: number;
}

/** Programmable provider faults. Rules apply per HTTP request, first matching rule wins. */
export class FaultPlan {
  private rules: FaultRule[] = [];
  /** Requests answered with a fault so far. */
  served = 0;

  /** The next `count` requests (containing `method`, if given) get `fault`. */
  next(count: number, fault: Fault, opts: { method?: string } = {}): this {
    this.rules.push({ fault, method: opts.method, remaining: count });
    return this;
  }

  /** Every request (containing `method`, if given) gets `fault` until `clear()`. */
  always(fault: Fault, opts: { method?: string } = {}): this {
    return this.next(Number.POSITIVE_INFINITY, fault, opts);
  }

  clear(): void {
    this.rules = [];
  }

  /** @internal the facade asks once per HTTP request. */
  take(methods: readonly string[]): Fault | undefined {
    const rule = this.rules.find((r) => r.remaining > 0 && (!r.method || methods.includes(r.method)));
    if (!rule) return undefined;
    rule.remaining -= 1;
    if (rule.remaining <= 0) this.rules = this.rules.filter((r) => r !== rule);
    this.served += 1;
    return rule.fault;
  }
}

export interface RoundTrip {
  /** JSON-RPC methods in the request (several for a batch). */
  methods: string[];
  batch: boolean;
  startedAt: number;
  /** undefined while in flight (or hanging). */
  endedAt?: number;
  status?: number;
  fault?: Fault['kind'];
}

/** What the facade saw: the numbers round-trip tests assert. */
export class FacadeStats {
  /** HTTP requests = provider round trips (a JSON-RPC batch is one). */
  roundTrips = 0;
  /** JSON-RPC calls per method (each element of a batch counts). */
  calls: Record<string, number> = {};
  inFlight = 0;
  maxInFlight = 0;
  log: RoundTrip[] = [];

  /** Total JSON-RPC calls, or those of one method. */
  callCount(method?: string): number {
    if (method) return this.calls[method] ?? 0;
    return Object.values(this.calls).reduce((a, b) => a + b, 0);
  }

  /**
   * Length of the longest chain of round trips each of which started after the previous one ended: the
   * number of *sequential* provider round trips. With a latency injected, parallel requests overlap and
   * count once, so this measures the critical path without asserting on time.
   */
  sequentialRoundTrips(): number {
    const done = this.log
      .filter((r): r is RoundTrip & { endedAt: number } => r.endedAt !== undefined)
      .sort((a, b) => a.startedAt - b.startedAt);
    const depth: number[] = [];
    let longest = 0;
    done.forEach((r, i) => {
      let before = 0;
      for (let j = 0; j < i; j++) {
        const prev = done[j];
        if (prev && prev.endedAt <= r.startedAt) before = Math.max(before, depth[j] ?? 0);
      }
      depth[i] = before + 1;
      longest = Math.max(longest, before + 1);
    });
    return longest;
  }

  reset(): void {
    this.roundTrips = 0;
    this.calls = {};
    this.maxInFlight = this.inFlight;
    this.log = [];
  }
}

export interface SolanaFacade {
  /** http://127.0.0.1:<port> — POST JSON-RPC here. */
  url: string;
  stats: FacadeStats;
  faults: FaultPlan;
  /** Delay every HTTP response by `ms` (0 to stop). */
  setLatency(ms: number): void;
  /**
   * Resolves once no request has been in flight for `quietMs` (longer than the test clients' retry
   * backoff): calls a previous test abandoned, and their retries, no longer land in the next test's stats.
   */
  idle(quietMs?: number): Promise<void>;
  close(): Promise<void>;
}

type JsonRpcId = string | number | null;
interface JsonRpcResponse {
  jsonrpc: '2.0';
  id: JsonRpcId;
  result?: unknown;
  error?: { code: number; message: string; data?: unknown };
}

/**
 * Serve `svm` over HTTP JSON-RPC on 127.0.0.1 (`port`, default an ephemeral one). `ledger` answers the history methods:
 * pass the chain's, and change state only through that chain (send / setAccount) — its version keys the
 * facade's token-account index. Without a ledger there is no history and no index cache.
 */
export async function startSolanaFacade(
  svm: LiteSVM,
  ledger?: TransactionLedger,
  listenPort = 0,
): Promise<SolanaFacade> {
  const stats = new FacadeStats();
  const faults = new FaultPlan();
  const rpc = new RpcMethods(svm, ledger ?? new TransactionLedger(), ledger !== undefined);
  const timers = new Set<NodeJS.Timeout>();
  let latencyMs = 0;

  const later = (ms: number, fn: () => void) => {
    if (ms <= 0) return fn();
    const t = setTimeout(() => {
      timers.delete(t);
      fn();
    }, ms);
    timers.add(t);
  };

  const server = createServer((req, res) => {
    const trip: RoundTrip = { methods: [], batch: false, startedAt: performance.now() };
    stats.roundTrips += 1;
    stats.log.push(trip);
    stats.inFlight += 1;
    stats.maxInFlight = Math.max(stats.maxInFlight, stats.inFlight);
    // 'finish' (response handed to the OS) precedes any follow-up request the client can send.
    res.once('finish', () => (trip.endedAt = performance.now()));
    res.once('close', () => (stats.inFlight -= 1));
    void readBody(req).then(
      (body) => respond(req, res, body, trip),
      () => send(res, trip, 413, 'text/plain', 'request body too large', latencyMs),
    );
  });

  function respond(req: IncomingMessage, res: ServerResponse, body: string, trip: RoundTrip): void {
    if (req.method === 'GET' && req.url === '/health') {
      trip.methods = ['GET /health'];
      const fault = faults.take(trip.methods);
      if (fault) return applyFault(res, trip, fault, () => 'ok', 'text/plain');
      return send(res, trip, 200, 'text/plain', 'ok', latencyMs);
    }
    if (req.method !== 'POST') return send(res, trip, 405, 'text/plain', 'POST JSON-RPC', latencyMs);

    let parsed: unknown;
    try {
      parsed = JSON.parse(body);
    } catch {
      parsed = undefined;
    }
    trip.batch = Array.isArray(parsed);
    trip.methods = (Array.isArray(parsed) ? parsed : [parsed]).map((c) =>
      isRecord(c) && typeof c.method === 'string' ? c.method : '?',
    );
    for (const m of trip.methods) stats.calls[m] = (stats.calls[m] ?? 0) + 1;

    // Answered from the state at arrival, like a node would, whatever the delay before it is sent.
    const answer = () => toJson(rpc.handleBody(parsed));
    const fault = faults.take(trip.methods);
    if (fault) return applyFault(res, trip, fault, answer, 'application/json');
    send(res, trip, 200, 'application/json', answer(), latencyMs);
  }

  function applyFault(
    res: ServerResponse,
    trip: RoundTrip,
    fault: Fault,
    answer: () => string,
    contentType: string,
  ): void {
    trip.fault = fault.kind;
    switch (fault.kind) {
      case 'http429':
        res.setHeader('Retry-After', String(fault.retryAfterSeconds));
        return send(
          res,
          trip,
          429,
          'application/json',
          toJson({ jsonrpc: '2.0', id: null, error: { code: 429, message: 'Too many requests' } }),
          latencyMs,
        );
      case 'http500':
        return send(res, trip, 500, 'text/plain', 'Internal Server Error', latencyMs);
      case 'hang':
        return; // closeAllConnections() at close() ends it
      case 'delay':
        return send(res, trip, 200, contentType, answer(), latencyMs + fault.ms);
      case 'garbage': {
        if (fault.variant === 'not-json') {
          return send(
            res,
            trip,
            200,
            'application/json',
            '<html><body><h1>502 Bad Gateway</h1></body></html>',
            latencyMs,
          );
        }
        const full = answer();
        return send(res, trip, 200, 'application/json', full.slice(0, Math.ceil(full.length / 2)), latencyMs);
      }
    }
  }

  function send(
    res: ServerResponse,
    trip: RoundTrip,
    status: number,
    contentType: string,
    body: string,
    delayMs: number,
  ): void {
    later(delayMs, () => {
      if (res.destroyed) return;
      trip.status = status;
      res.writeHead(status, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(body) });
      res.end(body);
    });
  }

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(listenPort, '127.0.0.1', resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    stats,
    faults,
    setLatency(ms: number) {
      latencyMs = ms;
    },
    async idle(quietMs = 100) {
      let quietSince = performance.now();
      while (performance.now() - quietSince < quietMs) {
        await new Promise((r) => setTimeout(r, 10));
        if (stats.inFlight > 0) quietSince = performance.now();
      }
    },
    async close() {
      for (const t of timers) clearTimeout(t);
      timers.clear();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeAllConnections();
      await closed;
    },
  };
}

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_BODY_BYTES) {
        reject(new Error('too large'));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Token account as a node's secondary index sees it. */
interface IndexedTokenAccount {
  address: Address;
  account: EncodedAccount;
  mint: Address;
  owner: Address;
  amount: bigint;
}

/** The JSON-RPC methods, each answering from LiteSVM's current state. */
class RpcMethods {
  private readonly methods: Record<string, (params: unknown[]) => unknown> = {
    getHealth: () => 'ok',
    getVersion: () => ({ 'solana-core': API_VERSION, 'feature-set': 3294202862 }),
    getSlot: () => this.slot(),
    getBlockHeight: () => this.slot(),
    getEpochInfo: () => this.epochInfo(),
    getLatestBlockhash: () => this.withContext(this.simulator.latestBlockhash()),
    getMinimumBalanceForRentExemption: (p) =>
      this.svm.minimumBalanceForRentExemption(BigInt(integerParam(p[0], 'data length'))),
    getBalance: (p) => this.withContext(this.svm.getBalance(addressParam(p[0])) ?? 0n),
    getAccountInfo: (p) => {
      const config = accountConfig(p[1]);
      return this.withContext(this.encodedAccount(addressParam(p[0]), config.dataSlice));
    },
    getMultipleAccounts: (p) => {
      const keys = p[0];
      if (!Array.isArray(keys)) throw invalidParams('Invalid params: expected an array of addresses');
      if (keys.length > MAX_MULTIPLE_ACCOUNTS) {
        throw invalidParams(`Too many inputs provided; max ${MAX_MULTIPLE_ACCOUNTS}`);
      }
      const config = accountConfig(p[1]);
      const addresses = keys.map(addressParam);
      return this.withContext(addresses.map((a) => this.encodedAccount(a, config.dataSlice)));
    },
    getTokenLargestAccounts: (p) => this.tokenLargestAccounts(addressParam(p[0])),
    getTokenAccountsByOwner: (p) => this.tokenAccountsByOwner(addressParam(p[0]), p[1], p[2]),
    getSignaturesForAddress: (p) => this.signaturesForAddress(addressParam(p[0]), p[1]),
    getTransaction: (p) => this.transaction(p[0], p[1]),
    simulateTransaction: (p) => this.simulator.simulate(p),
  };

  private index?: { version: number; accounts: IndexedTokenAccount[] };
  private readonly simulator: TransactionSimulator;

  constructor(
    private readonly svm: LiteSVM,
    private readonly ledger: TransactionLedger,
    private readonly cacheIndex: boolean,
  ) {
    this.simulator = new TransactionSimulator(svm, API_VERSION);
  }

  /** A parsed request body: one call, or a batch array (answered in order, one HTTP response). */
  handleBody(body: unknown): JsonRpcResponse | JsonRpcResponse[] {
    if (body === undefined) return errorResponse(null, -32700, 'Parse error');
    if (Array.isArray(body)) {
      if (body.length === 0) return errorResponse(null, -32600, 'Invalid request');
      return body.map((call) => this.handleCall(call));
    }
    return this.handleCall(body);
  }

  private handleCall(call: unknown): JsonRpcResponse {
    if (!isRecord(call) || call.jsonrpc !== '2.0' || typeof call.method !== 'string') {
      return errorResponse(null, -32600, 'Invalid request');
    }
    const id = isJsonRpcId(call.id) ? call.id : null;
    const method = this.methods[call.method];
    if (!method) return errorResponse(id, -32601, 'Method not found');
    const params = call.params === undefined ? [] : call.params;
    if (!Array.isArray(params)) return errorResponse(id, -32602, 'Invalid params: expected an array');
    try {
      return { jsonrpc: '2.0', result: method(params), id };
    } catch (err) {
      if (err instanceof RpcError) return errorResponse(id, err.code, err.message, err.data);
      return errorResponse(id, -32603, `Internal error: ${(err as Error).message}`);
    }
  }

  private slot(): bigint {
    return this.svm.getClock().slot;
  }

  private withContext<T>(value: T): { context: { apiVersion: string; slot: bigint }; value: T } {
    return { context: { apiVersion: API_VERSION, slot: this.slot() }, value };
  }

  private epochInfo() {
    const slot = this.slot();
    const epoch = epochOfSlot(this.svm, slot);
    const start = firstSlotOfEpoch(this.svm, epoch);
    return {
      absoluteSlot: slot,
      blockHeight: slot,
      epoch,
      slotIndex: slot - start,
      slotsInEpoch: firstSlotOfEpoch(this.svm, epoch + 1n) - start,
      transactionCount: BigInt(this.ledger.size),
    };
  }

  private encodedAccount(addr: Address, dataSlice?: { offset: number; length: number }) {
    const account = this.svm.getAccount(addr);
    return account.exists ? encodeAccount(account, dataSlice) : null;
  }

  /** Token accounts of the given programs, from the index. */
  private tokenAccounts(programs: readonly Address[]): IndexedTokenAccount[] {
    return this.tokenIndex().filter((t) => programs.includes(t.account.programAddress));
  }

  /**
   * Every SPL Token / Token-2022 token account, as a node's secondary index would hold them. LiteSVM lists
   * accounts by owner program, but listing and decoding a few hundred takes ~0.2 s: cached per state version.
   */
  private tokenIndex(): IndexedTokenAccount[] {
    if (this.cacheIndex && this.index?.version === this.ledger.version) return this.index.accounts;
    const decoder = getTokenDecoder();
    const accounts = [TOKEN_PROGRAM, TOKEN_2022_PROGRAM].flatMap((program) =>
      this.svm
        .getProgramAccounts(program)
        .filter((a) => isTokenAccountData(program, a.data))
        .map((account) => {
          const token = decoder.decode(account.data);
          return {
            address: account.address,
            account,
            mint: token.mint,
            owner: token.owner,
            amount: token.amount,
          };
        }),
    );
    this.index = { version: this.ledger.version, accounts };
    return accounts;
  }

  private tokenLargestAccounts(mint: Address) {
    const account = this.svm.getAccount(mint);
    if (!account.exists) throw invalidParams('Invalid param: could not find account');
    if (account.programAddress !== TOKEN_PROGRAM && account.programAddress !== TOKEN_2022_PROGRAM) {
      throw invalidParams('Invalid param: not a Token mint');
    }
    let decimals: number;
    try {
      decimals = getMintDecoder().decode(account.data).decimals;
    } catch {
      throw invalidParams('Invalid param: mint could not be unpacked');
    }
    const largest = this.tokenAccounts([account.programAddress])
      .filter((t) => t.mint === mint)
      .sort((a, b) =>
        a.amount === b.amount ? a.address.localeCompare(b.address) : a.amount > b.amount ? -1 : 1,
      )
      .slice(0, LARGEST_ACCOUNTS);
    return this.withContext(
      largest.map((t) => ({
        address: t.address,
        amount: t.amount.toString(),
        decimals,
        uiAmount: Number(t.amount) / 10 ** decimals,
        uiAmountString: uiAmountString(t.amount, decimals),
      })),
    );
  }

  private tokenAccountsByOwner(owner: Address, filter: unknown, config: unknown) {
    let programs: Address[];
    let mint: Address | undefined;
    if (isRecord(filter) && typeof filter.mint === 'string') {
      mint = addressParam(filter.mint);
      const mintAccount = this.svm.getAccount(mint);
      if (!mintAccount.exists) throw invalidParams('Invalid param: could not find mint');
      programs = [mintAccount.programAddress];
    } else if (isRecord(filter) && typeof filter.programId === 'string') {
      const programId = addressParam(filter.programId);
      if (programId !== TOKEN_PROGRAM && programId !== TOKEN_2022_PROGRAM) {
        throw invalidParams('Invalid param: unrecognized Token program id');
      }
      programs = [programId];
    } else {
      throw invalidParams('Invalid params: expected { mint } or { programId }');
    }
    const { dataSlice } = accountConfig(config);
    const value = this.tokenAccounts(programs)
      .filter((t) => t.owner === owner && (!mint || t.mint === mint))
      .map((t) => ({ pubkey: t.address, account: encodeAccount(t.account, dataSlice) }));
    return this.withContext(value);
  }

  private signaturesForAddress(addr: Address, config: unknown) {
    const cfg = isRecord(config) ? config : {};
    const limit = cfg.limit === undefined ? MAX_SIGNATURES_LIMIT : integerParam(cfg.limit, 'limit');
    if (limit < 1 || limit > MAX_SIGNATURES_LIMIT) {
      throw invalidParams(`Invalid limit; max ${MAX_SIGNATURES_LIMIT}`);
    }
    let history = this.ledger.forAddress(addr);
    if (typeof cfg.before === 'string') {
      const at = history.findIndex((t) => t.signature === cfg.before);
      history = at >= 0 ? history.slice(at + 1) : history;
    }
    if (typeof cfg.until === 'string') {
      const at = history.findIndex((t) => t.signature === cfg.until);
      history = at >= 0 ? history.slice(0, at) : history;
    }
    return history.slice(0, limit).map((t) => ({
      signature: t.signature,
      slot: t.slot,
      err: null,
      memo: null,
      blockTime: t.blockTime,
      confirmationStatus: 'finalized',
    }));
  }

  private transaction(signature: unknown, config: unknown) {
    if (typeof signature !== 'string' || !/^[1-9A-HJ-NP-Za-km-z]{64,88}$/.test(signature)) {
      throw invalidParams('Invalid param: WrongSize');
    }
    const cfg = isRecord(config) ? config : {};
    const encoding = cfg.encoding ?? 'json';
    if (encoding !== 'json' && encoding !== 'base64') {
      throw invalidParams(
        `Invalid params: the test facade serves json or base64 transactions (got ${JSON.stringify(encoding)})`,
      );
    }
    const tx = this.ledger.get(signature);
    if (!tx) return null;
    if (tx.version !== 'legacy' && cfg.maxSupportedTransactionVersion === undefined) {
      throw new RpcError(
        -32015,
        `Transaction version (${tx.version}) is not supported by the requesting client. Please try the request again with the following configuration parameter: "maxSupportedTransactionVersion": ${tx.version}`,
      );
    }
    return {
      slot: tx.slot,
      blockTime: tx.blockTime,
      version: tx.version,
      meta: {
        err: null,
        status: { Ok: null },
        fee: tx.fee,
        preBalances: tx.preBalances,
        postBalances: tx.postBalances,
        innerInstructions: [],
        logMessages: tx.logs,
        preTokenBalances: [],
        postTokenBalances: [],
        rewards: [],
        loadedAddresses: { readonly: [], writable: [] },
        computeUnitsConsumed: tx.computeUnits,
      },
      transaction:
        encoding === 'base64' ? [Buffer.from(tx.wire).toString('base64'), 'base64'] : jsonTransaction(tx),
    };
  }
}

function jsonTransaction(tx: RecordedTransaction) {
  const decoded = getTransactionDecoder().decode(tx.wire);
  const message = getCompiledTransactionMessageDecoder().decode(decoded.messageBytes);
  if (message.version === 1) throw new Error('v1 transactions are not recorded by the fixtures');
  const base58 = getBase58Decoder();
  return {
    signatures: Object.values(decoded.signatures).map((s) => (s ? base58.decode(s) : '1'.repeat(64))),
    message: {
      accountKeys: tx.accountKeys,
      header: {
        numRequiredSignatures: message.header.numSignerAccounts,
        numReadonlySignedAccounts: message.header.numReadonlySignerAccounts,
        numReadonlyUnsignedAccounts: message.header.numReadonlyNonSignerAccounts,
      },
      instructions: message.instructions.map((ix) => ({
        programIdIndex: ix.programAddressIndex,
        accounts: ix.accountIndices ?? [],
        data: base58.decode(ix.data ?? new Uint8Array()),
        stackHeight: null,
      })),
      recentBlockhash: message.lifetimeToken,
      ...(tx.version === 'legacy' ? {} : { addressTableLookups: [] }),
    },
  };
}

/** Token accounts only: SPL Token mints (82) and multisigs (355) and Token-2022 mints are skipped. */
function isTokenAccountData(program: Address, data: ReadonlyUint8Array): boolean {
  if (data.length === SPL_ACCOUNT_LEN) return true;
  if (program !== TOKEN_2022_PROGRAM || data.length === SPL_MULTISIG_LEN) return false;
  return data.length > SPL_ACCOUNT_LEN && data[SPL_ACCOUNT_LEN] === ACCOUNT_TYPE_ACCOUNT;
}

function accountConfig(config: unknown): { dataSlice?: { offset: number; length: number } } {
  const cfg = isRecord(config) ? config : {};
  if (cfg.encoding !== 'base64') {
    throw invalidParams(
      `Invalid params: the riskwatch test facade serves base64 account data only (encoding ${JSON.stringify(cfg.encoding ?? 'binary')} is not supported)`,
    );
  }
  if (cfg.dataSlice === undefined) return {};
  const slice = cfg.dataSlice;
  if (!isRecord(slice)) throw invalidParams('Invalid params: dataSlice');
  return {
    dataSlice: { offset: integerParam(slice.offset, 'offset'), length: integerParam(slice.length, 'length') },
  };
}

function errorResponse(id: JsonRpcId, code: number, message: string, data?: unknown): JsonRpcResponse {
  return { jsonrpc: '2.0', error: data === undefined ? { code, message } : { code, message, data }, id };
}

function isJsonRpcId(value: unknown): value is JsonRpcId {
  return typeof value === 'string' || typeof value === 'number' || value === null;
}

/** Like a node's `uiAmountString`: the exact decimal, trailing zeros trimmed. */
function uiAmountString(amount: bigint, decimals: number): string {
  if (decimals === 0) return amount.toString();
  const digits = amount.toString().padStart(decimals + 1, '0');
  const whole = digits.slice(0, -decimals);
  const fraction = digits.slice(-decimals).replace(/0+$/, '');
  return fraction ? `${whole}.${fraction}` : whole;
}

const BIGINT_MARK = '\u0001bigint:';

/** JSON with u64 values (lamports, rentEpoch, slots) written as bare integers, as nodes write them. */
function toJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    typeof v === 'bigint' ? `${BIGINT_MARK}${v}` : v,
  ).replace(/"\\u0001bigint:(\d+)"/g, '$1');
}
