import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  parseAbi,
  type Abi,
  type Account,
  type Address,
  type Chain,
  type Hex,
  type PublicClient,
  type Transport,
  type WalletClient,
} from 'viem';
import { privateKeyToAccount } from 'viem/accounts';
import { waitForTransactionReceipt } from 'viem/actions';
import { compileContracts } from './solidity.js';

/*
 * Deploy helpers for the Solidity test contracts (test/support/evm/contracts/*.sol, compiled by
 * ./solidity.ts). The ABIs below are written out so that viem types every call (function names,
 * argument and result types); test/unit/evm-contracts.test.ts checks that each one is exactly the ABI
 * the compiler produced, so they cannot drift from the sources.
 */

/** PermitToken.sol: OpenZeppelin ERC20 + ERC20Permit (ERC-2612), anyone may `mint`. */
export const permitTokenAbi = parseAbi([
  'constructor(string name_, string symbol_, uint8 decimals_)',
  'error ECDSAInvalidSignature()',
  'error ECDSAInvalidSignatureLength(uint256 length)',
  'error ECDSAInvalidSignatureS(bytes32 s)',
  'error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed)',
  'error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed)',
  'error ERC20InvalidApprover(address approver)',
  'error ERC20InvalidReceiver(address receiver)',
  'error ERC20InvalidSender(address sender)',
  'error ERC20InvalidSpender(address spender)',
  'error ERC2612ExpiredSignature(uint256 deadline)',
  'error ERC2612InvalidSigner(address signer, address owner)',
  'error InvalidAccountNonce(address account, uint256 currentNonce)',
  'error InvalidShortString()',
  'error StringTooLong(string str)',
  'event Approval(address indexed owner, address indexed spender, uint256 value)',
  'event EIP712DomainChanged()',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'function DOMAIN_SEPARATOR() view returns (bytes32)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function approve(address spender, uint256 value) returns (bool)',
  'function balanceOf(address account) view returns (uint256)',
  'function decimals() view returns (uint8)',
  'function eip712Domain() view returns (bytes1 fields, string name, string version, uint256 chainId, address verifyingContract, bytes32 salt, uint256[] extensions)',
  'function mint(address to, uint256 amount)',
  'function name() view returns (string)',
  'function nonces(address owner) view returns (uint256)',
  'function permit(address owner, address spender, uint256 value, uint256 deadline, uint8 v, bytes32 r, bytes32 s)',
  'function symbol() view returns (string)',
  'function totalSupply() view returns (uint256)',
  'function transfer(address to, uint256 value) returns (bool)',
  'function transferFrom(address from, address to, uint256 value) returns (bool)',
]);

/** Collectible.sol: OpenZeppelin ERC721, anyone may `mint(to, id)`. */
export const collectibleAbi = parseAbi([
  'constructor(string name_, string symbol_)',
  'error ERC721IncorrectOwner(address sender, uint256 tokenId, address owner)',
  'error ERC721InsufficientApproval(address operator, uint256 tokenId)',
  'error ERC721InvalidApprover(address approver)',
  'error ERC721InvalidOperator(address operator)',
  'error ERC721InvalidOwner(address owner)',
  'error ERC721InvalidReceiver(address receiver)',
  'error ERC721InvalidSender(address sender)',
  'error ERC721NonexistentToken(uint256 tokenId)',
  'event Approval(address indexed owner, address indexed approved, uint256 indexed tokenId)',
  'event ApprovalForAll(address indexed owner, address indexed operator, bool approved)',
  'event Transfer(address indexed from, address indexed to, uint256 indexed tokenId)',
  'function approve(address to, uint256 tokenId)',
  'function balanceOf(address owner) view returns (uint256)',
  'function getApproved(uint256 tokenId) view returns (address)',
  'function isApprovedForAll(address owner, address operator) view returns (bool)',
  'function mint(address to, uint256 id)',
  'function name() view returns (string)',
  'function ownerOf(uint256 tokenId) view returns (address)',
  'function safeTransferFrom(address from, address to, uint256 tokenId)',
  'function safeTransferFrom(address from, address to, uint256 tokenId, bytes data)',
  'function setApprovalForAll(address operator, bool approved)',
  'function supportsInterface(bytes4 interfaceId) view returns (bool)',
  'function symbol() view returns (string)',
  'function tokenURI(uint256 tokenId) view returns (string)',
  'function transferFrom(address from, address to, uint256 tokenId)',
]);

/** Swap.sol: `buy(token)` pays `msg.value * rate` tokens, `sell(token, amount)` pays `amount / rate` wei. */
export const swapAbi = parseAbi([
  'constructor(uint256 rate_)',
  'error EtherTransferFailed()',
  'error SafeERC20FailedOperation(address token)',
  'error ZeroRate()',
  'function buy(address token) payable returns (uint256 amount)',
  'function rate() view returns (uint256)',
  'function sell(address token, uint256 amount) returns (uint256 value)',
  'receive() external payable',
]);

/** Router.sol: an approved spender; its owner may `pull`/`pullNft` from anyone (a drainer), others only their own. */
export const routerAbi = parseAbi([
  'constructor(address initialOwner)',
  'error NotAllowed(address caller, address from)',
  'error OwnableInvalidOwner(address owner)',
  'error OwnableUnauthorizedAccount(address account)',
  'error SafeERC20FailedOperation(address token)',
  'event OwnershipTransferred(address indexed previousOwner, address indexed newOwner)',
  'function owner() view returns (address)',
  'function pull(address token, address from, address to, uint256 amount)',
  'function pullNft(address collection, address from, address to, uint256 id)',
  'function renounceOwnership()',
  'function transferOwnership(address newOwner)',
]);

/** Each test contract's typed ABI, by the contract name solc reports. */
export const testContractAbis = {
  PermitToken: permitTokenAbi,
  Collectible: collectibleAbi,
  Swap: swapAbi,
  Router: routerAbi,
} as const satisfies Record<string, Abi>;

export type TestContractName = keyof typeof testContractAbis;

/** A wallet client with its account and chain set (what `connectAnvil(...).wallet()` returns). */
export type DeployWallet = WalletClient<Transport, Chain, Account>;

export interface AnvilConnection {
  readonly chain: Chain;
  /** Polls every 20 ms: anvil mines on submission, viem's default 4 s would only slow receipt waits. */
  readonly publicClient: PublicClient<Transport, Chain>;
  /** A wallet client for a local account or its private key (e.g. `anvil.accounts[i].privateKey`). */
  wallet(account: Account | Hex): DeployWallet;
}

/**
 * viem clients for an anvil (a `RunningAnvil` fits: `{ url, chainId }`), made the way fixtures.ts makes
 * them: a chain from defineChain, an HTTP transport without retries, 20 ms polling.
 */
export function connectAnvil(node: { url: string; chainId: number }): AnvilConnection {
  const chain = defineChain({
    id: node.chainId,
    name: 'anvil (riskwatch tests)',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [node.url] } },
  });
  const transport = http(node.url, { retryCount: 0 });
  return {
    chain,
    publicClient: createPublicClient({ chain, transport, pollingInterval: 20 }),
    wallet: (account) =>
      createWalletClient({
        account: typeof account === 'string' ? privateKeyToAccount(account) : account,
        chain,
        transport,
        pollingInterval: 20,
      }),
  };
}

async function bytecodeOf(name: TestContractName): Promise<Hex> {
  const compiled = (await compileContracts())[name];
  if (!compiled) throw new Error(`solc produced no contract ${name}`);
  return compiled.bytecode;
}

async function mined(wallet: DeployWallet, name: TestContractName, hash: Hex): Promise<Address> {
  const receipt = await waitForTransactionReceipt(wallet, { hash, pollingInterval: 20, timeout: 10_000 });
  if (receipt.status !== 'success' || !receipt.contractAddress) {
    throw new Error(`deploying ${name} (${hash}) from ${wallet.account.address} failed`);
  }
  return getAddress(receipt.contractAddress);
}

/* Each deploy helper waits for its receipt and returns the new contract's checksummed address. */

/** Deploy PermitToken (no supply: call `mint(to, amount)`, open to anyone). */
export async function deployPermitToken(
  wallet: DeployWallet,
  opts: { name: string; symbol: string; decimals: number },
): Promise<Address> {
  const hash = await wallet.deployContract({
    abi: permitTokenAbi,
    bytecode: await bytecodeOf('PermitToken'),
    args: [opts.name, opts.symbol, opts.decimals],
  });
  return mined(wallet, 'PermitToken', hash);
}

/** Deploy Collectible (no tokens: call `mint(to, id)`, open to anyone). */
export async function deployCollectible(
  wallet: DeployWallet,
  opts: { name: string; symbol: string } = { name: 'Collectible', symbol: 'CLCT' },
): Promise<Address> {
  const hash = await wallet.deployContract({
    abi: collectibleAbi,
    bytecode: await bytecodeOf('Collectible'),
    args: [opts.name, opts.symbol],
  });
  return mined(wallet, 'Collectible', hash);
}

/**
 * Deploy Swap. `rate` is in token base units per wei (1000n: 1 ether buys 1000 tokens of 18 decimals).
 * It starts empty: mint it tokens to sell, send it ether to buy back with.
 */
export async function deploySwap(wallet: DeployWallet, opts: { rate: bigint }): Promise<Address> {
  const hash = await wallet.deployContract({
    abi: swapAbi,
    bytecode: await bytecodeOf('Swap'),
    args: [opts.rate],
  });
  return mined(wallet, 'Swap', hash);
}

/** Deploy Router; its owner (default: the deploying account) may pull from anyone who approved it. */
export async function deployRouter(wallet: DeployWallet, opts: { owner?: Address } = {}): Promise<Address> {
  const hash = await wallet.deployContract({
    abi: routerAbi,
    bytecode: await bytecodeOf('Router'),
    args: [opts.owner ?? wallet.account.address],
  });
  return mined(wallet, 'Router', hash);
}
