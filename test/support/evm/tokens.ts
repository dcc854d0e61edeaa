import {
  encodeFunctionData,
  getAddress,
  parseAbi,
  parseEther,
  parseUnits,
  zeroAddress,
  type Abi,
  type Address,
  type ContractConstructorArgs,
  type Hex,
} from 'viem';
import { mnemonicToAccount } from 'viem/accounts';
import { ANVIL_MNEMONIC } from './anvil.js';
import { EIP1967_ADMIN_SLOT } from './bytecode.js';
import { connectAnvil } from './contracts.js';
import { compileContracts } from './solidity.js';
import {
  addLiquidityEth,
  deployUniswapV2,
  uniswapV2FactoryAbi,
  uniswapV2PairAbi,
  uniswapV2PairAddress,
  uniswapV2RouterAbi,
  weth9Abi,
  type UniswapV2,
} from './uniswap.js';

/*
 * The token scanner's test world: a Uniswap V2 (from its npm artifacts, ./uniswap.ts) and one ERC-20 of
 * each kind the scanner must tell apart (test/support/evm/contracts/Tokens.sol, whose headers say what
 * should be found), each pooled against WETH with real liquidity, except `noPool`.
 *
 * Everything is deployed by dev account 0 of a FRESH anvil (its nonce must be 0), in a fixed order, so
 * every address below (tokens, proxy admin, pairs) is the same on every run; block timestamps are not.
 * The ABIs are written out for viem's types; test/unit/evm-contracts.test.ts checks the token ones
 * against the compiler output (tokenContractAbis), test/unit/evm-token-world.test.ts the Uniswap ones
 * against the artifacts.
 */

/* ------------------------------------------------------------------ ABIs */

const erc20Items = [
  'error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed)',
  'error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed)',
  'error ERC20InvalidApprover(address approver)',
  'error ERC20InvalidReceiver(address receiver)',
  'error ERC20InvalidSender(address sender)',
  'error ERC20InvalidSpender(address spender)',
  'event Approval(address indexed owner, address indexed spender, uint256 value)',
  'event Transfer(address indexed from, address indexed to, uint256 value)',
  'function allowance(address owner, address spender) view returns (uint256)',
  'function approve(address spender, uint256 value) returns (bool)',
  'function balanceOf(address account) view returns (uint256)',
  'function decimals() view returns (uint8)',
  'function name() view returns (string)',
  'function symbol() view returns (string)',
  'function totalSupply() view returns (uint256)',
  'function transfer(address to, uint256 value) returns (bool)',
  'function transferFrom(address from, address to, uint256 value) returns (bool)',
] as const;

const ownableItems = [
  'error OwnableInvalidOwner(address owner)',
  'error OwnableUnauthorizedAccount(address account)',
  'event OwnershipTransferred(address indexed previousOwner, address indexed newOwner)',
  'function owner() view returns (address)',
  'function renounceOwnership()',
  'function transferOwnership(address newOwner)',
] as const;

const tokenConstructor = 'constructor(string name_, string symbol_, uint256 supply)';

/** Any ERC-20 here (OpenZeppelin's ERC20: its functions, events and errors). */
export const erc20Abi = parseAbi(erc20Items);

/** CleanToken: a plain ERC20, fixed supply, no owner. */
export const cleanTokenAbi = parseAbi([tokenConstructor, ...erc20Items]);

/** MintableToken: ERC20 + Ownable, `mint` onlyOwner. */
export const mintableTokenAbi = parseAbi([
  tokenConstructor,
  ...erc20Items,
  ...ownableItems,
  'function mint(address to, uint256 amount)',
]);

/** PausableToken: ERC20 + ERC20Pausable + Ownable. */
export const pausableTokenAbi = parseAbi([
  tokenConstructor,
  ...erc20Items,
  ...ownableItems,
  'error EnforcedPause()',
  'error ExpectedPause()',
  'event Paused(address account)',
  'event Unpaused(address account)',
  'function pause()',
  'function paused() view returns (bool)',
  'function unpause()',
]);

/** UpgradeableToken: the implementation; call it through the proxy's address. */
export const upgradeableTokenAbi = parseAbi([
  'constructor()',
  ...erc20Items,
  ...ownableItems,
  'error InvalidInitialization()',
  'error NotInitializing()',
  'event Initialized(uint64 version)',
  'function initialize(string name_, string symbol_, address owner_, uint256 supply)',
  'function mint(address to, uint256 amount)',
]);

/** TokenProxy: OpenZeppelin's TransparentUpgradeableProxy (no functions of its own for callers). */
export const tokenProxyAbi = parseAbi([
  'constructor(address logic, address initialOwner, bytes data) payable',
  'error AddressEmptyCode(address target)',
  'error ERC1967InvalidAdmin(address admin)',
  'error ERC1967InvalidImplementation(address implementation)',
  'error ERC1967NonPayable()',
  'error ERC1967ProxyUninitialized()',
  'error FailedCall()',
  'error ProxyDeniedAdminAccess()',
  'event AdminChanged(address previousAdmin, address newAdmin)',
  'event Upgraded(address indexed implementation)',
  'fallback() external payable',
]);

/**
 * The ProxyAdmin the proxy deployed (OpenZeppelin's; not compiled from our sources, so only the parts the
 * tests call: test/unit/evm-token-world.test.ts calls them on chain).
 */
export const proxyAdminAbi = parseAbi([
  'function UPGRADE_INTERFACE_VERSION() view returns (string)',
  'function owner() view returns (address)',
  'function upgradeAndCall(address proxy, address implementation, bytes data) payable',
]);

/** FeeToken: `feeBps` on every transfer not from/to the owner, paid to the owner. */
export const feeTokenAbi = parseAbi([
  'constructor(string name_, string symbol_, uint256 supply, uint256 feeBps_)',
  ...erc20Items,
  ...ownableItems,
  'error FeeTooHigh(uint256 feeBps)',
  'function feeBps() view returns (uint256)',
  'function setFee(uint256 feeBps_)',
]);

/** HoneypotToken: transfers to `pair` revert for everyone but the owner. */
export const honeypotTokenAbi = parseAbi([
  tokenConstructor,
  ...erc20Items,
  ...ownableItems,
  'error TransferBlocked(address from)',
  'function pair() view returns (address)',
  'function setPair(address pair_)',
]);

/** BlacklistToken: blacklisted accounts can neither send nor receive. */
export const blacklistTokenAbi = parseAbi([
  tokenConstructor,
  ...erc20Items,
  ...ownableItems,
  'error Blacklisted(address account)',
  'function blacklist(address account)',
  'function isBlacklisted(address account) view returns (bool)',
  'function unblacklist(address account)',
]);

/** TimeBombToken: transfers to `pair` revert for non-owners once `launchedAt + GRACE_PERIOD` has passed. */
export const timeBombTokenAbi = parseAbi([
  tokenConstructor,
  ...erc20Items,
  ...ownableItems,
  'error TransferBlocked(address from)',
  'function GRACE_PERIOD() view returns (uint256)',
  'function launchedAt() view returns (uint256)',
  'function pair() view returns (address)',
  'function setPair(address pair_)',
]);

/** LimitsToken: max transaction, max wallet (pair exempt), trading switch; owner exempt. */
export const limitsTokenAbi = parseAbi([
  'constructor(string name_, string symbol_, uint256 supply, uint256 maxTx, uint256 maxWallet)',
  ...erc20Items,
  ...ownableItems,
  'error MaxTxExceeded(uint256 value, uint256 maxTxAmount)',
  'error MaxWalletExceeded(uint256 balance, uint256 maxWalletSize)',
  'error TradingNotOpen()',
  'function enableTrading()',
  'function maxTxAmount() view returns (uint256)',
  'function maxWalletSize() view returns (uint256)',
  'function pair() view returns (address)',
  'function setMaxTxAmount(uint256 amount)',
  'function setMaxWalletSize(uint256 amount)',
  'function setPair(address pair_)',
  'function tradingOpen() view returns (bool)',
]);

/** Each contract of Tokens.sol's typed ABI, by the contract name solc reports. */
export const tokenContractAbis = {
  CleanToken: cleanTokenAbi,
  MintableToken: mintableTokenAbi,
  PausableToken: pausableTokenAbi,
  UpgradeableToken: upgradeableTokenAbi,
  TokenProxy: tokenProxyAbi,
  FeeToken: feeTokenAbi,
  HoneypotToken: honeypotTokenAbi,
  BlacklistToken: blacklistTokenAbi,
  TimeBombToken: timeBombTokenAbi,
  LimitsToken: limitsTokenAbi,
} as const satisfies Record<string, Abi>;

export type TokenContractName = keyof typeof tokenContractAbis;

/* ----------------------------------------------------------------- world */

/** The tokens with a WETH pool. */
export type PooledTokenName =
  | 'clean'
  | 'mintable'
  | 'renounced'
  | 'pausable'
  | 'proxy'
  | 'fee'
  | 'honeypot'
  | 'blacklist'
  | 'timeBomb'
  | 'limits';

/** Every ERC-20 of the world (`proxy` is the token's address, i.e. the proxy's). */
export type TokenName = PooledTokenName | 'noPool';

/** 18 everywhere. */
export const TOKEN_DECIMALS = 18;
/** Minted to the deployer (dev account 0) by every token at deployment. */
export const TOKEN_SUPPLY = parseUnits('1000000', TOKEN_DECIMALS);
/** What each pool starts with: 100,000 tokens against 10 ETH (1 ETH ≈ 10,000 tokens before fees). */
export const POOL_LIQUIDITY = {
  tokens: parseUnits('100000', TOKEN_DECIMALS),
  eth: parseEther('10'),
} as const;
/** FeeToken's fee: 500 basis points, 5 %. */
export const FEE_BPS = 500n;
/** LimitsToken's limits: 1 % of the supply per transfer, 2 % per wallet. */
export const TOKEN_LIMITS = {
  maxTxAmount: parseUnits('10000', TOKEN_DECIMALS),
  maxWalletSize: parseUnits('20000', TOKEN_DECIMALS),
} as const;
/** TimeBombToken's safe window after deployment (its GRACE_PERIOD), in seconds. */
export const TIME_BOMB_GRACE_SECONDS = 30n * 60n;

/** Each token's name() and symbol(). */
export const TOKEN_METADATA = {
  clean: { name: 'Clean Token', symbol: 'CLEAN' },
  noPool: { name: 'Unlisted Token', symbol: 'NOPOOL' },
  mintable: { name: 'Mintable Token', symbol: 'MINT' },
  renounced: { name: 'Renounced Token', symbol: 'RNCD' },
  pausable: { name: 'Pausable Token', symbol: 'PAUSE' },
  proxy: { name: 'Upgradeable Token', symbol: 'UPGR' },
  fee: { name: 'Fee Token', symbol: 'FEE' },
  honeypot: { name: 'Honeypot Token', symbol: 'HONEY' },
  blacklist: { name: 'Blacklist Token', symbol: 'BLOCK' },
  timeBomb: { name: 'Time Bomb Token', symbol: 'TBOMB' },
  limits: { name: 'Limits Token', symbol: 'LIMIT' },
} as const satisfies Record<TokenName, { name: string; symbol: string }>;

/** The ABI to call each address of `world.tokens` with (and Uniswap's). */
export const TOKEN_WORLD_ABIS = {
  clean: cleanTokenAbi,
  noPool: cleanTokenAbi,
  mintable: mintableTokenAbi,
  renounced: mintableTokenAbi,
  pausable: pausableTokenAbi,
  proxy: upgradeableTokenAbi,
  proxyImplementation: upgradeableTokenAbi,
  proxyAdmin: proxyAdminAbi,
  fee: feeTokenAbi,
  honeypot: honeypotTokenAbi,
  blacklist: blacklistTokenAbi,
  timeBomb: timeBombTokenAbi,
  limits: limitsTokenAbi,
  erc20: erc20Abi,
  factory: uniswapV2FactoryAbi,
  router: uniswapV2RouterAbi,
  pair: uniswapV2PairAbi,
  weth: weth9Abi,
} as const;

export interface TokenWorld {
  readonly url: string;
  readonly chainId: number;
  /** Head block once every setup transaction is mined (one transaction per block: 39). */
  readonly blockNumber: bigint;
  readonly uniswap: UniswapV2;
  /** Dev account 0: deployer, owner of every owned token (but `renounced`), of the ProxyAdmin, of the LP. */
  readonly owner: Address;
  readonly tokens: { readonly [K in TokenName]: Address } & {
    /** UpgradeableToken itself, in the proxy's EIP-1967 implementation slot. */
    readonly proxyImplementation: Address;
    /** The ProxyAdmin the proxy created, in its EIP-1967 admin slot; owned by `owner`. */
    readonly proxyAdmin: Address;
  };
  /** Each pooled token's WETH pair (token0/token1 sorted by address, as Uniswap does). */
  readonly pairs: { readonly [K in PooledTokenName]: Address };
  readonly abis: typeof TOKEN_WORLD_ABIS;
}

export interface BuildTokenWorldOptions {
  /** The mnemonic anvil was started with (default: anvil's own); account 0 deploys. */
  mnemonic?: string;
}

async function bytecodeOf(name: TokenContractName): Promise<Hex> {
  const compiled = (await compileContracts())[name];
  if (!compiled) throw new Error(`solc produced no contract ${name}`);
  return compiled.bytecode;
}

/**
 * Build the world on a running anvil whose account 0 has sent nothing yet (a fresh `startAnvil()`): 39
 * transactions, well under a second. Uniswap V2 (nonces 0-2), the eleven tokens and the implementation
 * (3-14), `renounceOwnership` (15), approve + addLiquidityETH per pool (16-35), `setPair` on the honeypot,
 * the time bomb and the limits token (36-38).
 */
export async function buildTokenWorld(url: string, opts: BuildTokenWorldOptions = {}): Promise<TokenWorld> {
  const probe = connectAnvil({ url, chainId: 1 });
  const chainId = await probe.publicClient.getChainId();
  const conn = chainId === 1 ? probe : connectAnvil({ url, chainId });
  const wallet = conn.wallet(mnemonicToAccount(opts.mnemonic ?? ANVIL_MNEMONIC, { addressIndex: 0 }));
  const owner = wallet.account.address;
  const nonce = await conn.publicClient.getTransactionCount({ address: owner });
  if (nonce !== 0) {
    throw new Error(`buildTokenWorld needs a fresh anvil: ${owner} has already sent ${nonce} transactions`);
  }

  const send = async (what: string, hash: Promise<Hex>): Promise<Address | undefined> => {
    const receipt = await conn.publicClient.waitForTransactionReceipt({ hash: await hash, timeout: 10_000 });
    if (receipt.status !== 'success') throw new Error(`${what} (${receipt.transactionHash}) failed`);
    return receipt.contractAddress ? getAddress(receipt.contractAddress) : undefined;
  };
  const deploy = async <const abi extends Abi>(
    name: TokenContractName,
    abi: abi,
    args: ContractConstructorArgs<abi>,
  ): Promise<Address> => {
    const untyped: Abi = abi; // the arguments were checked against `abi` above
    const hash = wallet.deployContract({
      abi: untyped,
      bytecode: await bytecodeOf(name),
      args: args as readonly unknown[],
    });
    const address = await send(`deploying ${name}`, hash);
    if (!address) throw new Error(`deploying ${name} created no contract`);
    return address;
  };
  const meta = (name: TokenName) => [TOKEN_METADATA[name].name, TOKEN_METADATA[name].symbol] as const;

  const uniswap = await deployUniswapV2(wallet);

  const clean = await deploy('CleanToken', cleanTokenAbi, [...meta('clean'), TOKEN_SUPPLY]);
  const noPool = await deploy('CleanToken', cleanTokenAbi, [...meta('noPool'), TOKEN_SUPPLY]);
  const mintable = await deploy('MintableToken', mintableTokenAbi, [...meta('mintable'), TOKEN_SUPPLY]);
  const renounced = await deploy('MintableToken', mintableTokenAbi, [...meta('renounced'), TOKEN_SUPPLY]);
  const pausable = await deploy('PausableToken', pausableTokenAbi, [...meta('pausable'), TOKEN_SUPPLY]);
  const proxyImplementation = await deploy('UpgradeableToken', upgradeableTokenAbi, []);
  const proxy = await deploy('TokenProxy', tokenProxyAbi, [
    proxyImplementation,
    owner,
    encodeInitialize(...meta('proxy'), owner, TOKEN_SUPPLY),
  ]);
  const fee = await deploy('FeeToken', feeTokenAbi, [...meta('fee'), TOKEN_SUPPLY, FEE_BPS]);
  const honeypot = await deploy('HoneypotToken', honeypotTokenAbi, [...meta('honeypot'), TOKEN_SUPPLY]);
  const blacklist = await deploy('BlacklistToken', blacklistTokenAbi, [...meta('blacklist'), TOKEN_SUPPLY]);
  const timeBomb = await deploy('TimeBombToken', timeBombTokenAbi, [...meta('timeBomb'), TOKEN_SUPPLY]);
  const limits = await deploy('LimitsToken', limitsTokenAbi, [
    ...meta('limits'),
    TOKEN_SUPPLY,
    TOKEN_LIMITS.maxTxAmount,
    TOKEN_LIMITS.maxWalletSize,
  ]);

  // The admin slot holds the ProxyAdmin the proxy's constructor created (its first CREATE).
  const adminWord = await conn.publicClient.getStorageAt({ address: proxy, slot: EIP1967_ADMIN_SLOT });
  const proxyAdmin = getAddress(`0x${(adminWord ?? '0x').slice(-40).padStart(40, '0')}`);
  if (proxyAdmin === zeroAddress) throw new Error(`TokenProxy ${proxy} has no admin`);

  await send(
    'renounceOwnership() on the renounced token',
    wallet.writeContract({ address: renounced, abi: mintableTokenAbi, functionName: 'renounceOwnership' }),
  );

  const pooled = { clean, mintable, renounced, pausable, proxy, fee, honeypot, blacklist, timeBomb, limits };
  const pairs = {} as Record<PooledTokenName, Address>;
  for (const [name, token] of Object.entries(pooled) as [PooledTokenName, Address][]) {
    const pair = await addLiquidityEth(
      wallet,
      uniswap.router,
      token,
      POOL_LIQUIDITY.tokens,
      POOL_LIQUIDITY.eth,
    );
    // Where the router will look for it (its hard-coded init code hash): must be where the factory put it.
    const expected = uniswapV2PairAddress(uniswap.factory, token, uniswap.weth);
    if (pair !== expected)
      throw new Error(`${name}: the factory's pair ${pair} is not the router's ${expected}`);
    pairs[name] = pair;
  }

  for (const [name, token, abi] of [
    ['honeypot', honeypot, honeypotTokenAbi],
    ['timeBomb', timeBomb, timeBombTokenAbi],
    ['limits', limits, limitsTokenAbi],
  ] as const) {
    await send(
      `setPair on ${name}`,
      wallet.writeContract({ address: token, abi, functionName: 'setPair', args: [pairs[name]] }),
    );
  }

  return {
    url,
    chainId,
    // cacheTime 0: viem would otherwise answer from the receipt polling's cache, a block behind.
    blockNumber: await conn.publicClient.getBlockNumber({ cacheTime: 0 }),
    uniswap,
    owner,
    tokens: {
      clean,
      noPool,
      mintable,
      renounced,
      pausable,
      proxy,
      proxyImplementation,
      proxyAdmin,
      fee,
      honeypot,
      blacklist,
      timeBomb,
      limits,
    },
    pairs,
    abis: TOKEN_WORLD_ABIS,
  };
}

/** Calldata of `initialize(name, symbol, owner, supply)`, run by the proxy's constructor. */
function encodeInitialize(name: string, symbol: string, owner: Address, supply: bigint): Hex {
  return encodeFunctionData({
    abi: upgradeableTokenAbi,
    functionName: 'initialize',
    args: [name, symbol, owner, supply],
  });
}
