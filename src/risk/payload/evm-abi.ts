import {
  decodeAbiParameters,
  decodeFunctionData,
  getAddress,
  parseAbi,
  toEventSelector,
  type Address,
  type Hex,
} from 'viem';

/*
 * The token standards a wallet's transactions touch, as ABIs for viem's codecs: the calls a transaction's
 * calldata may make (approve, setApprovalForAll, transfers, Permit2's approve), and the events its logs
 * may carry (ERC-20 / ERC-721 / ERC-1155 transfers and approvals, Permit2 approvals, WETH deposits).
 */

export const TOKEN_CALLS = parseAbi([
  'function approve(address spender, uint256 amount)',
  'function increaseAllowance(address spender, uint256 addedValue)',
  'function transfer(address to, uint256 amount)',
  'function transferFrom(address from, address to, uint256 amount)',
  'function setApprovalForAll(address operator, bool approved)',
  'function safeTransferFrom(address from, address to, uint256 tokenId)',
  'function safeTransferFrom(address from, address to, uint256 tokenId, bytes data)',
  'function safeTransferFrom(address from, address to, uint256 id, uint256 amount, bytes data)',
  'function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)',
]);

/** Permit2's AllowanceTransfer `approve` (a different selector from ERC-20's: uint160, uint48). */
export const PERMIT2_CALLS = parseAbi([
  'function approve(address token, address spender, uint160 amount, uint48 expiration)',
]);

/** What the simulation reads before and after the transaction, and the metadata of the assets. */
export const READ_CALLS = parseAbi([
  'function balanceOf(address owner) view returns (uint256)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function isApprovedForAll(address owner, address operator) view returns (bool)',
  'function decimals() view returns (uint8)',
  'function symbol() view returns (string)',
  'function supportsInterface(bytes4 interfaceId) view returns (bool)',
]);

export const TOPICS = {
  transfer: toEventSelector('Transfer(address,address,uint256)'),
  approval: toEventSelector('Approval(address,address,uint256)'),
  approvalForAll: toEventSelector('ApprovalForAll(address,address,bool)'),
  transferSingle: toEventSelector('TransferSingle(address,address,address,uint256,uint256)'),
  transferBatch: toEventSelector('TransferBatch(address,address,address,uint256[],uint256[])'),
  permit2Approval: toEventSelector('Approval(address,address,address,uint160,uint48)'),
  permit2Permit: toEventSelector('Permit(address,address,address,uint160,uint48,uint48)'),
  wethDeposit: toEventSelector('Deposit(address,uint256)'),
  wethWithdrawal: toEventSelector('Withdrawal(address,uint256)'),
} as const;

/** Two EVM addresses are the same whatever their case (EIP-55 or not). */
export const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

/** The pseudo-contract `eth_simulateV1`'s `traceTransfers` logs native transfers from (ERC-7528). */
export const NATIVE_PSEUDO_TOKEN = '0xeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeeee';

export interface EvmLog {
  address: Hex;
  topics: Hex[];
  data: Hex;
}

/** One token event of a log, decoded; null for any other log (or one that does not decode). */
export type TokenEvent =
  | {
      kind: 'transfer';
      token: Address;
      standard: 'erc20' | 'erc721';
      from: Address;
      to: Address;
      amount: bigint;
      tokenId?: bigint;
    }
  | { kind: 'transfer1155'; token: Address; from: Address; to: Address; ids: bigint[]; amounts: bigint[] }
  | { kind: 'native'; from: Address; to: Address; amount: bigint }
  | {
      kind: 'approval';
      token: Address;
      standard: 'erc20' | 'erc721';
      owner: Address;
      spender: Address;
      amount: bigint;
      tokenId?: bigint;
    }
  | { kind: 'approval_for_all'; token: Address; owner: Address; operator: Address; approved: boolean }
  | {
      kind: 'permit2_approval';
      permit2: Address;
      owner: Address;
      token: Address;
      spender: Address;
      amount: bigint;
      expiration: number;
    }
  | { kind: 'weth'; token: Address; owner: Address; amount: bigint };

const topicAddress = (t: Hex): Address => getAddress(`0x${t.slice(26)}`);
const word = (data: Hex, i: number): bigint => BigInt(`0x${data.slice(2 + 64 * i, 2 + 64 * (i + 1)) || '0'}`);

/** Decodes the token events this service understands (by topic and topic count, then viem's codecs). */
export function decodeTokenEvent(log: EvmLog): TokenEvent | null {
  const [topic0, t1, t2, t3] = log.topics.map((t) => t.toLowerCase() as Hex);
  const token = getAddress(log.address.toLowerCase());
  const data = log.data.toLowerCase() as Hex;
  try {
    switch (topic0) {
      case TOPICS.transfer:
        if (log.topics.length === 3 && data.length >= 66) {
          if (log.address.toLowerCase() === NATIVE_PSEUDO_TOKEN)
            return { kind: 'native', from: topicAddress(t1!), to: topicAddress(t2!), amount: word(data, 0) };
          return {
            kind: 'transfer',
            token,
            standard: 'erc20',
            from: topicAddress(t1!),
            to: topicAddress(t2!),
            amount: word(data, 0),
          };
        }
        if (log.topics.length === 4)
          return {
            kind: 'transfer',
            token,
            standard: 'erc721',
            from: topicAddress(t1!),
            to: topicAddress(t2!),
            amount: 1n,
            tokenId: BigInt(t3!),
          };
        return null;
      case TOPICS.approval:
        if (log.topics.length === 3 && data.length >= 66)
          return {
            kind: 'approval',
            token,
            standard: 'erc20',
            owner: topicAddress(t1!),
            spender: topicAddress(t2!),
            amount: word(data, 0),
          };
        if (log.topics.length === 4)
          return {
            kind: 'approval',
            token,
            standard: 'erc721',
            owner: topicAddress(t1!),
            spender: topicAddress(t2!),
            amount: 1n,
            tokenId: BigInt(t3!),
          };
        return null;
      case TOPICS.approvalForAll:
        if (log.topics.length !== 3 || data.length < 66) return null;
        return {
          kind: 'approval_for_all',
          token,
          owner: topicAddress(t1!),
          operator: topicAddress(t2!),
          approved: word(data, 0) !== 0n,
        };
      case TOPICS.transferSingle: {
        if (log.topics.length !== 4) return null;
        const [id, amount] = decodeAbiParameters([{ type: 'uint256' }, { type: 'uint256' }], data);
        return {
          kind: 'transfer1155',
          token,
          from: topicAddress(t2!),
          to: topicAddress(t3!),
          ids: [id],
          amounts: [amount],
        };
      }
      case TOPICS.transferBatch: {
        if (log.topics.length !== 4) return null;
        const [ids, amounts] = decodeAbiParameters([{ type: 'uint256[]' }, { type: 'uint256[]' }], data);
        if (ids.length !== amounts.length) return null;
        return {
          kind: 'transfer1155',
          token,
          from: topicAddress(t2!),
          to: topicAddress(t3!),
          ids: [...ids],
          amounts: [...amounts],
        };
      }
      case TOPICS.permit2Approval:
      case TOPICS.permit2Permit:
        if (log.topics.length !== 4 || data.length < 130) return null;
        return {
          kind: 'permit2_approval',
          permit2: token,
          owner: topicAddress(t1!),
          token: topicAddress(t2!),
          spender: topicAddress(t3!),
          amount: word(data, 0),
          expiration: Number(word(data, 1)),
        };
      case TOPICS.wethDeposit:
      case TOPICS.wethWithdrawal:
        if (log.topics.length !== 2 || data.length < 66) return null;
        return {
          kind: 'weth',
          token,
          owner: topicAddress(t1!),
          amount: topic0 === TOPICS.wethDeposit ? word(data, 0) : -word(data, 0),
        };
      default:
        return null;
    }
  } catch {
    return null;
  }
}

/** What a transaction's calldata asks of the contract it calls, when that is a token-standard call. */
export type DecodedCall =
  | { fn: 'approve'; spender: Address; amount: bigint }
  | { fn: 'increaseAllowance'; spender: Address; amount: bigint }
  | { fn: 'setApprovalForAll'; operator: Address; approved: boolean }
  | { fn: 'transfer'; to: Address; amount: bigint }
  | { fn: 'transferFrom'; from: Address; to: Address; amount: bigint }
  | { fn: 'safeTransferFrom'; from: Address; to: Address; id: bigint; amount?: bigint }
  | { fn: 'permit'; owner: Address; spender: Address; amount: bigint; deadline: bigint }
  | { fn: 'permit2_approve'; token: Address; spender: Address; amount: bigint; expiration: number };

/** The token-standard call in `data` sent to `to` (Permit2's own approve only at Permit2), or null. */
export function decodeTokenCall(data: Hex, isPermit2: boolean): DecodedCall | null {
  if (data.length < 10) return null;
  try {
    if (isPermit2) {
      const { args } = decodeFunctionData({ abi: PERMIT2_CALLS, data });
      return {
        fn: 'permit2_approve',
        token: args[0],
        spender: args[1],
        amount: args[2],
        expiration: Number(args[3]),
      };
    }
    const decoded = decodeFunctionData({ abi: TOKEN_CALLS, data });
    switch (decoded.functionName) {
      case 'approve':
        return { fn: 'approve', spender: decoded.args[0], amount: decoded.args[1] };
      case 'increaseAllowance':
        return { fn: 'increaseAllowance', spender: decoded.args[0], amount: decoded.args[1] };
      case 'setApprovalForAll':
        return { fn: 'setApprovalForAll', operator: decoded.args[0], approved: decoded.args[1] };
      case 'transfer':
        return { fn: 'transfer', to: decoded.args[0], amount: decoded.args[1] };
      case 'transferFrom':
        return { fn: 'transferFrom', from: decoded.args[0], to: decoded.args[1], amount: decoded.args[2] };
      case 'safeTransferFrom': {
        const a = decoded.args;
        return a.length === 5
          ? { fn: 'safeTransferFrom', from: a[0], to: a[1], id: a[2], amount: a[3] }
          : { fn: 'safeTransferFrom', from: a[0], to: a[1], id: a[2] };
      }
      case 'permit':
        return {
          fn: 'permit',
          owner: decoded.args[0],
          spender: decoded.args[1],
          amount: decoded.args[2],
          deadline: decoded.args[3],
        };
    }
  } catch {
    return null;
  }
}
