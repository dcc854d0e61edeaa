import { createRequire } from 'node:module';
import {
  encodePacked,
  getAddress,
  getContractAddress,
  keccak256,
  maxUint256,
  parseAbi,
  zeroAddress,
  type Abi,
  type Address,
  type Hex,
} from 'viem';
import { readContract, waitForTransactionReceipt } from 'viem/actions';
import type { DeployWallet } from './contracts.js';

/*
 * Uniswap V2 on a test chain, deployed from the npm packages' own build artifacts (the code running on
 * mainnet, compiled by Uniswap: solc 0.5.16 for the core, 0.6.6 for the periphery), not recompiled here:
 * WETH9 and UniswapV2Router02 from @uniswap/v2-periphery, UniswapV2Factory (and the UniswapV2Pair it
 * creates) from @uniswap/v2-core.
 *
 * The router never asks the factory where a pair is: UniswapV2Library.pairFor computes the CREATE2
 * address from a hard-coded hash of the pair's init code. That only works if the factory deploys exactly
 * the pair code the hash was taken of. For these artifacts it does: keccak256 of v2-core's
 * UniswapV2Pair.json `bytecode` is 0x96e8ac42…845f, the mainnet value, and it is the hash compiled into
 * v2-periphery's router; the factory's init code carries that same pair code. deployUniswapV2 checks both
 * before deploying, so a changed artifact fails loudly instead of sending swaps to an empty address.
 *
 * The ABIs are the parts the tests use, written out for viem's types; test/unit/evm-token-world.test.ts
 * checks each item against the artifact's own ABI.
 */

interface Artifact {
  readonly abi: Abi;
  /** Hex without `0x` in these artifacts (Waffle output). */
  readonly bytecode: string;
}

const require = createRequire(import.meta.url);

function artifact(path: string): { abi: Abi; bytecode: Hex } {
  const json = require(path) as Artifact;
  const code = json.bytecode.startsWith('0x') ? json.bytecode.slice(2) : json.bytecode;
  if (!/^([0-9a-f]{2})+$/i.test(code)) throw new Error(`${path}: no (linked) bytecode`);
  return { abi: json.abi, bytecode: `0x${code}` };
}

/** The build artifacts, read from node_modules once (bytecode with a `0x`, ABI as published). */
export const uniswapV2Artifacts = {
  weth: artifact('@uniswap/v2-periphery/build/WETH9.json'),
  factory: artifact('@uniswap/v2-core/build/UniswapV2Factory.json'),
  pair: artifact('@uniswap/v2-core/build/UniswapV2Pair.json'),
  router: artifact('@uniswap/v2-periphery/build/UniswapV2Router02.json'),
} as const;

/** Mainnet's Uniswap V2 pair init code hash, hard-coded in UniswapV2Library.pairFor. */
export const UNISWAP_V2_INIT_CODE_HASH: Hex =
  '0x96e8ac4277198ff8b6f785478aa9a39f403cb768dd02cbee326c3e7da348845f';

/** keccak256 of the artifact's pair init code: what the factory's CREATE2 really uses. */
export function uniswapV2PairInitCodeHash(): Hex {
  return keccak256(uniswapV2Artifacts.pair.bytecode);
}

/** Where the factory's `createPair(tokenA, tokenB)` puts the pair (and where the router looks for it). */
export function uniswapV2PairAddress(factory: Address, tokenA: Address, tokenB: Address): Address {
  const [token0, token1] = BigInt(tokenA) < BigInt(tokenB) ? [tokenA, tokenB] : [tokenB, tokenA];
  return getContractAddress({
    opcode: 'CREATE2',
    from: factory,
    salt: keccak256(encodePacked(['address', 'address'], [token0, token1])),
    bytecodeHash: UNISWAP_V2_INIT_CODE_HASH,
  });
}

export const weth9Abi = parseAbi([
  'event Approval(address indexed src, address indexed guy, uint256 wad)',
  'event Deposit(address indexed dst, uint256 wad)',
  'event Transfer(address indexed src, address indexed dst, uint256 wad)',
  'event Withdrawal(address indexed src, uint256 wad)',
  'function allowance(address, address) view returns (uint256)',
  'function approve(address guy, uint256 wad) returns (bool)',
  'function balanceOf(address) view returns (uint256)',
  'function decimals() view returns (uint8)',
  'function deposit() payable',
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function totalSupply() view returns (uint256)',
  'function transfer(address dst, uint256 wad) returns (bool)',
  'function transferFrom(address src, address dst, uint256 wad) returns (bool)',
  'function withdraw(uint256 wad)',
]);

export const uniswapV2FactoryAbi = parseAbi([
  'constructor(address _feeToSetter)',
  'event PairCreated(address indexed token0, address indexed token1, address pair, uint256)',
  'function allPairs(uint256) view returns (address)',
  'function allPairsLength() view returns (uint256)',
  'function createPair(address tokenA, address tokenB) returns (address pair)',
  'function feeTo() view returns (address)',
  'function feeToSetter() view returns (address)',
  'function getPair(address, address) view returns (address)',
]);

export const uniswapV2PairAbi = parseAbi([
  'event Swap(address indexed sender, uint256 amount0In, uint256 amount1In, uint256 amount0Out, uint256 amount1Out, address indexed to)',
  'event Sync(uint112 reserve0, uint112 reserve1)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'function balanceOf(address) view returns (uint256)',
  'function factory() view returns (address)',
  'function getReserves() view returns (uint112 _reserve0, uint112 _reserve1, uint32 _blockTimestampLast)',
  'function token0() view returns (address)',
  'function token1() view returns (address)',
  'function totalSupply() view returns (uint256)',
]);

export const uniswapV2RouterAbi = parseAbi([
  'constructor(address _factory, address _WETH)',
  'function WETH() view returns (address)',
  'function factory() view returns (address)',
  'function addLiquidityETH(address token, uint256 amountTokenDesired, uint256 amountTokenMin, uint256 amountETHMin, address to, uint256 deadline) payable returns (uint256 amountToken, uint256 amountETH, uint256 liquidity)',
  'function getAmountsIn(uint256 amountOut, address[] path) view returns (uint256[] amounts)',
  'function getAmountsOut(uint256 amountIn, address[] path) view returns (uint256[] amounts)',
  'function swapExactETHForTokens(uint256 amountOutMin, address[] path, address to, uint256 deadline) payable returns (uint256[] amounts)',
  'function swapExactETHForTokensSupportingFeeOnTransferTokens(uint256 amountOutMin, address[] path, address to, uint256 deadline) payable',
  'function swapExactTokensForETH(uint256 amountIn, uint256 amountOutMin, address[] path, address to, uint256 deadline) returns (uint256[] amounts)',
  'function swapExactTokensForETHSupportingFeeOnTransferTokens(uint256 amountIn, uint256 amountOutMin, address[] path, address to, uint256 deadline)',
  'receive() external payable',
]);

/** The three contracts deployUniswapV2 makes (checksummed addresses). */
export interface UniswapV2 {
  readonly factory: Address;
  readonly router: Address;
  readonly weth: Address;
}

async function mined(wallet: DeployWallet, what: string, hash: Hex): Promise<Address | undefined> {
  const receipt = await waitForTransactionReceipt(wallet, { hash, pollingInterval: 20, timeout: 10_000 });
  if (receipt.status !== 'success')
    throw new Error(`${what} (${hash}) from ${wallet.account.address} failed`);
  return receipt.contractAddress ? getAddress(receipt.contractAddress) : undefined;
}

async function deployed(wallet: DeployWallet, what: string, hash: Hex): Promise<Address> {
  const address = await mined(wallet, `deploying ${what}`, hash);
  if (!address) throw new Error(`deploying ${what} (${hash}) created no contract`);
  return address;
}

/**
 * Deploy WETH9, UniswapV2Factory(feeToSetter: the wallet's account) and UniswapV2Router02(factory, weth),
 * in that order: three transactions, so from a fresh account they land at its nonces 0, 1 and 2.
 * Throws before sending anything if the artifacts disagree on the pair init code hash.
 */
export async function deployUniswapV2(wallet: DeployWallet): Promise<UniswapV2> {
  const { weth: wethArt, factory: factoryArt, pair: pairArt, router: routerArt } = uniswapV2Artifacts;
  if (uniswapV2PairInitCodeHash() !== UNISWAP_V2_INIT_CODE_HASH) {
    throw new Error(`UniswapV2Pair.json init code hash is ${uniswapV2PairInitCodeHash()}, not mainnet's`);
  }
  if (!factoryArt.bytecode.includes(pairArt.bytecode.slice(2))) {
    throw new Error('UniswapV2Factory.json does not carry the init code of UniswapV2Pair.json');
  }
  if (!routerArt.bytecode.includes(UNISWAP_V2_INIT_CODE_HASH.slice(2))) {
    throw new Error(`UniswapV2Router02.json does not compute pairs with ${UNISWAP_V2_INIT_CODE_HASH}`);
  }

  const weth = await deployed(
    wallet,
    'WETH9',
    await wallet.deployContract({ abi: weth9Abi, bytecode: wethArt.bytecode }),
  );
  const factory = await deployed(
    wallet,
    'UniswapV2Factory',
    await wallet.deployContract({
      abi: uniswapV2FactoryAbi,
      bytecode: factoryArt.bytecode,
      args: [wallet.account.address],
    }),
  );
  const router = await deployed(
    wallet,
    'UniswapV2Router02',
    await wallet.deployContract({
      abi: uniswapV2RouterAbi,
      bytecode: routerArt.bytecode,
      args: [factory, weth],
    }),
  );
  return { factory, router, weth };
}

const approveAbi = parseAbi(['function approve(address spender, uint256 value) returns (bool)']);

/**
 * Gas limit of addLiquidityEth's addLiquidityETH (creating the pair takes about 2.7 M). Fixed, not estimated:
 * a pair writes its price accumulators only when the block timestamp has moved since its last update, so
 * an estimate made within the same second as the previous trade can fall short of the mined transaction.
 * A test sending swaps through the router needs an explicit limit for the same reason.
 */
export const ADD_LIQUIDITY_GAS = 6_000_000n;

/**
 * Pool `tokenAmount` of `token` (18 decimals or not: base units) with `ethAmount` wei through the router's
 * addLiquidityETH, which creates the WETH pair if there is none; the LP tokens go to the wallet. Two
 * transactions: `approve(router, tokenAmount)`, then addLiquidityETH with no minimums and no deadline.
 * Returns the pair's address (as the factory reports it).
 */
export async function addLiquidityEth(
  wallet: DeployWallet,
  router: Address,
  token: Address,
  tokenAmount: bigint,
  ethAmount: bigint,
): Promise<Address> {
  await mined(
    wallet,
    `approve(${router}) on ${token}`,
    await wallet.writeContract({
      address: token,
      abi: approveAbi,
      functionName: 'approve',
      args: [router, tokenAmount],
    }),
  );
  await mined(
    wallet,
    `addLiquidityETH(${token})`,
    await wallet.writeContract({
      address: router,
      abi: uniswapV2RouterAbi,
      functionName: 'addLiquidityETH',
      args: [token, tokenAmount, 0n, 0n, wallet.account.address, maxUint256],
      value: ethAmount,
      gas: ADD_LIQUIDITY_GAS,
    }),
  );
  const [factory, weth] = await Promise.all([
    readContract(wallet, { address: router, abi: uniswapV2RouterAbi, functionName: 'factory' }),
    readContract(wallet, { address: router, abi: uniswapV2RouterAbi, functionName: 'WETH' }),
  ]);
  const pair = await readContract(wallet, {
    address: factory,
    abi: uniswapV2FactoryAbi,
    functionName: 'getPair',
    args: [token, weth],
  });
  if (pair === zeroAddress) throw new Error(`addLiquidityETH(${token}) left no pair`);
  return getAddress(pair);
}
