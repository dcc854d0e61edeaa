import { isHex, numberToHex, pad, type Address, type Hex } from 'viem';
import type { EvmRpc } from '../../chains/evm.js';
import { RpcError } from '../../chains/jsonrpc.js';
import { networkLabel } from '../../chains/registry.js';
import { AppError } from '../../platform/errors.js';
import { TOPICS, type EvmLog } from '../payload/evm-abi.js';

/*
 * The approval logs of one wallet over a block range (readWalletApprovals' first phase): one eth_getLogs
 * per window for every approval event that names the wallet as owner, windows issued several at once,
 * a window the provider refuses cut smaller, and what could not be read reported as gaps.
 */

/** A log as the reduce needs it: where it sits in the chain, and the transaction that emitted it. */
export interface ApprovalLog extends EvmLog {
  blockNumber: number;
  logIndex: number;
  transactionHash: Hex | null;
}

export interface BlockGap {
  fromBlock: number;
  toBlock: number;
  reason: string;
}

export interface LogScanOptions {
  fromBlock: bigint;
  toBlock: bigint;
  /** Largest window asked for in one call. */
  maxRange: bigint;
  /** eth_getLogs calls this scan may make, refused ones included. */
  maxCalls: number;
  /** When to stop issuing windows (ms since the epoch); the rest become gaps. */
  deadlineAt?: number;
  signal?: AbortSignal;
  /**
   * `oldest` first (a watchlist cursor: what is left unread is then the newest part, read again next
   * time, so the cursor always moves); default `newest` first (a lookback: recent approvals matter most).
   */
  order?: 'newest' | 'oldest';
}

export interface LogScan {
  gaps: BlockGap[];
  getLogs: number;
  /** Rounds of calls issued together: each is one round trip of latency. */
  waves: number;
  /** Whether any window was read (a scan that read nothing means the provider could not be used). */
  read: boolean;
}

/** Windows issued in the same tick: one batch (the client splits it by batch_max), one round trip. */
const WAVE = 16;
/** The logs are history reads: they never share an HTTP request with state reads issued meanwhile. */
const LOGS_BATCH_GROUP = 'evm-approval-logs';
/** Every approval event a wallet's owner topic can carry; Permit2's are kept only from Permit2 itself. */
const APPROVAL_TOPICS = [
  TOPICS.approval,
  TOPICS.approvalForAll,
  TOPICS.permit2Approval,
  TOPICS.permit2Permit,
];
/**
 * What providers say when a range is too much for them (Infura, Alchemy, QuickNode, public nodes:
 * "query returned more than 10000 results", "block range too large", "exceed maximum block range",
 * "Log response size exceeded", "query timeout exceeded"): a smaller window may pass.
 */
const REFUSAL = /range|results|limit|too (large|many|big)|exceed|size|timeout|timed out/i;
/** A rate limit is not a range refusal: halving the window would only multiply the calls. */
const RATE_LIMITED = /rate|request count|capacity|too many requests/i;
/** The block range some providers suggest in their refusal (`Try with this block range [0x…, 0x…]`). */
const HINT = /\[\s*(0x[0-9a-f]+)\s*,\s*(0x[0-9a-f]+)\s*\]/i;

interface Range {
  from: bigint;
  to: bigint;
  /** A smaller window for this range alone: it was refused for what it holds, not for its size. */
  span?: bigint;
}

type Outcome = { logs: ApprovalLog[] } | { refused: string; hint?: bigint } | { failed: string };

/**
 * Reads every approval log of `owner` in [fromBlock, toBlock], newest windows first, handing each
 * window's logs to `onLogs` as it arrives (the caller keeps only the latest per key: memory stays the
 * size of one answer plus the candidates). Throws only when the caller aborts.
 */
export async function scanApprovalLogs(
  rpc: EvmRpc,
  owner: Address,
  opts: LogScanOptions,
  onLogs: (logs: ApprovalLog[]) => void,
): Promise<LogScan> {
  const ownerTopic = pad(owner.toLowerCase() as Hex, { size: 32 });
  const scan: LogScan = { gaps: [], getLogs: 0, waves: 0, read: false };
  const todo: Range[] = [{ from: opts.fromBlock, to: opts.toBlock }];
  let span = opts.maxRange > 0n ? opts.maxRange : 1n;
  /** The largest window that passed: a refusal at most this size is about its blocks, not the range. */
  let passed = 0n;
  // After the span shrank, one window at a time until one passes: a wide wave of windows all too large
  // for the provider would only be refused together (and count against its rate limit).
  let proven = true;
  const gap = (r: Range, reason: string) =>
    scan.gaps.push({ fromBlock: Number(r.from), toBlock: Number(r.to), reason });

  while (todo.length > 0) {
    if (opts.signal?.aborted)
      throw new AppError(
        'provider_unavailable',
        `Reading the approvals of ${owner} was abandoned by its caller.`,
      );
    const left = opts.deadlineAt === undefined ? undefined : opts.deadlineAt - Date.now();
    const stop =
      left !== undefined && left <= 0
        ? 'not read before the deadline'
        : scan.getLogs >= opts.maxCalls
          ? `not read: the budget of ${opts.maxCalls} eth_getLogs calls was spent`
          : undefined;
    if (stop) {
      for (const r of todo.splice(0)) gap(r, stop);
      break;
    }
    const wave: Range[] = [];
    const width = proven ? WAVE : 1;
    while (wave.length < width && todo.length > 0 && scan.getLogs + wave.length < opts.maxCalls)
      wave.push(cut(todo, span, opts.order ?? 'newest'));
    scan.getLogs += wave.length;
    scan.waves += 1;
    const call = { signal: opts.signal, deadlineMs: left, batchGroup: LOGS_BATCH_GROUP };
    // Issued in this tick: the windows leave together.
    const outcomes = await Promise.all(wave.map((r) => getLogs(rpc, r, ownerTopic, call)));
    if (opts.signal?.aborted) continue;

    let failed: string | undefined;
    let answered = false;
    let refused = false;
    outcomes.forEach((o, i) => {
      const r = wave[i]!;
      const size = r.to - r.from + 1n;
      if ('logs' in o) {
        scan.read = answered = true;
        passed = size > passed ? size : passed;
        onLogs(o.logs);
      } else if ('refused' in o) {
        answered = true;
        if (size === 1n) return gap(r, `eth_getLogs refused even one block: ${o.refused}`);
        const smaller = o.hint !== undefined && o.hint < size ? o.hint : size / 2n;
        todo.unshift({ ...r, span: smaller });
        // Larger than any window that passed: the provider's range limit, for the whole scan. Otherwise
        // these blocks hold too many logs (a results limit): only this range is cut smaller.
        if (size > passed && smaller < span) [span, refused] = [smaller > passed ? smaller : passed, true];
      } else {
        failed = o.failed;
        gap(r, `eth_getLogs failed: ${o.failed}`);
      }
    });
    if (answered) proven = !refused;
    // A provider that failed every window of a wave (after the client's own retries) is down: asking
    // it for the rest would only spend the deadline.
    if (!answered && failed !== undefined) {
      for (const r of todo.splice(0)) gap(r, `not read: eth_getLogs failed: ${failed}`);
    }
    todo.sort((a, b) => (a.to > b.to ? -1 : a.to < b.to ? 1 : 0) * (opts.order === 'oldest' ? -1 : 1));
  }
  scan.gaps = mergeGaps(scan.gaps);
  return scan;
}

/** The next window: the newest (or oldest) `span` (or the range's own) blocks of the first range left; the rest stays. */
function cut(todo: Range[], span: bigint, order: 'newest' | 'oldest'): Range {
  const r = todo.shift()!;
  const width = r.span !== undefined && r.span < span ? r.span : span;
  if (r.to - r.from + 1n <= width) return { from: r.from, to: r.to };
  if (order === 'oldest') {
    todo.unshift({ ...r, from: r.from + width });
    return { from: r.from, to: r.from + width - 1n };
  }
  todo.unshift({ ...r, to: r.to - width });
  return { from: r.to - width + 1n, to: r.to };
}

async function getLogs(
  rpc: EvmRpc,
  r: Range,
  ownerTopic: Hex,
  call: { signal?: AbortSignal; deadlineMs?: number; batchGroup: string },
): Promise<Outcome> {
  const filter = {
    fromBlock: numberToHex(r.from),
    toBlock: numberToHex(r.to),
    topics: [APPROVAL_TOPICS, ownerTopic],
  };
  let result: unknown;
  try {
    result = await rpc.rpc.call('eth_getLogs', [filter], call);
  } catch (err) {
    return classify(err);
  }
  if (!Array.isArray(result))
    return {
      failed: `the ${networkLabel(rpc.network)} node provider answered eth_getLogs with something other than a list`,
    };
  return { logs: result.flatMap(parseLog) };
}

/** A refusal of the range (try smaller) or a failure of the provider (a gap). */
function classify(err: unknown): Outcome {
  if (err instanceof RpcError) {
    const message = `${err.rpcMessage} (code ${err.code})`;
    // -32601: the node has no eth_getLogs at all; other errors name no limit that a smaller range avoids.
    if (
      err.code === -32601 ||
      RATE_LIMITED.test(err.rpcMessage) ||
      !(REFUSAL.test(err.rpcMessage) || err.code === -32005 || err.code === -32602)
    )
      return { failed: message };
    const hint = HINT.exec(err.rpcMessage);
    const size = hint ? BigInt(hint[2]!) - BigInt(hint[1]!) + 1n : undefined;
    return size !== undefined && size > 0n ? { refused: message, hint: size } : { refused: message };
  }
  const message = err instanceof Error ? err.message : String(err);
  // An HTTP 413, or an answer past max_response_mib: the range held too many logs for one answer.
  if (err instanceof AppError && /HTTP 413|the answer exceeded/.test(message)) return { refused: message };
  return { failed: message };
}

/** A log of the answer, or nothing for an entry that is not one (or was removed by a reorg). */
function parseLog(entry: unknown): ApprovalLog[] {
  if (typeof entry !== 'object' || entry === null) return [];
  const e = entry as Record<string, unknown>;
  const hex = (v: unknown): v is Hex => typeof v === 'string' && isHex(v);
  if (e.removed === true || !hex(e.address) || !hex(e.data) || !hex(e.blockNumber) || !hex(e.logIndex))
    return [];
  if (!Array.isArray(e.topics) || !e.topics.every(hex)) return [];
  return [
    {
      address: e.address,
      topics: e.topics,
      data: e.data,
      blockNumber: Number(BigInt(e.blockNumber)),
      logIndex: Number(BigInt(e.logIndex)),
      transactionHash: hex(e.transactionHash) ? e.transactionHash : null,
    },
  ];
}

/** In block order, touching gaps of the same reason as one. */
export function mergeGaps(gaps: BlockGap[]): BlockGap[] {
  const out: BlockGap[] = [];
  for (const g of [...gaps].sort((a, b) => a.fromBlock - b.fromBlock)) {
    const last = out[out.length - 1];
    if (last && last.reason === g.reason && last.toBlock + 1 >= g.fromBlock)
      last.toBlock = Math.max(last.toBlock, g.toBlock);
    else out.push({ ...g });
  }
  return out;
}
