import {
  createTestClient,
  getAddress,
  getContractAddress,
  http,
  keccak256,
  maxUint256,
  parseEther,
  parseUnits,
  zeroAddress,
  type Abi,
  type Address,
  type Hex,
} from 'viem';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import { EIP1967_ADMIN_SLOT, EIP1967_IMPLEMENTATION_SLOT } from '../support/evm/bytecode.js';
import { connectAnvil, type AnvilConnection, type DeployWallet } from '../support/evm/contracts.js';
import {
  buildTokenWorld,
  erc20Abi,
  FEE_BPS,
  POOL_LIQUIDITY,
  TOKEN_LIMITS,
  TOKEN_METADATA,
  TOKEN_SUPPLY,
  type PooledTokenName,
  type TokenName,
  type TokenWorld,
} from '../support/evm/tokens.js';
import {
  UNISWAP_V2_INIT_CODE_HASH,
  uniswapV2Artifacts,
  uniswapV2FactoryAbi,
  uniswapV2PairAbi,
  uniswapV2PairAddress,
  uniswapV2RouterAbi,
  weth9Abi,
} from '../support/evm/uniswap.js';

/*
 * The token scanner's world (test/support/evm/tokens.ts) on a real anvil: every token does what its
 * header in Tokens.sol says, shown with real transactions from a second dev account (the trader) through
 * the real Uniswap V2 router. Reverts are mined as failed transactions (explicit gas, no estimation), not
 * only simulated.
 */

let anvil: RunningAnvil;
let conn: AnvilConnection;
let world: TokenWorld;
// Dev accounts: 0 built the world (owner), 1 trades, 2 receives wallet-to-wallet transfers.
let owner: DeployWallet;
let trader: DeployWallet;
let friend: Address;

beforeAll(async () => {
  anvil = await startAnvil();
  conn = connectAnvil(anvil);
  world = await buildTokenWorld(anvil.url);
  const keys = anvil.accounts.map((a) => a.privateKey);
  owner = conn.wallet(keys[0]!);
  trader = conn.wallet(keys[1]!);
  friend = getAddress(anvil.accounts[2]!.address);
});

afterAll(async () => {
  await anvil?.stop();
});

/** Wait for a transaction and insist it succeeded. */
async function mine(hash: Promise<Hex>) {
  const receipt = await conn.publicClient.waitForTransactionReceipt({ hash: await hash, timeout: 10_000 });
  expect(receipt.status).toBe('success');
  return receipt;
}

/** Wait for a transaction sent with explicit gas (so it is mined even though it reverts) and insist it reverted. */
async function mineReverted(hash: Promise<Hex>) {
  const receipt = await conn.publicClient.waitForTransactionReceipt({ hash: await hash, timeout: 10_000 });
  expect(receipt.status).toBe('reverted');
  return receipt;
}

/**
 * Every router swap and every call expected to revert is sent with this gas limit. Passing one skips
 * estimation, which would refuse to send a reverting call, and which is unreliable for a swap anyway: the
 * pair writes its price accumulators only when the block's timestamp differs from its last update's, so an
 * estimate made within the same second comes out ~40,000 gas short of the mined transaction.
 */
const GAS = 1_000_000n;

const balanceOf = (token: Address, account: Address) =>
  conn.publicClient.readContract({
    address: token,
    abi: erc20Abi,
    functionName: 'balanceOf',
    args: [account],
  });

/** The pool's quote for `value` wei of WETH into `token` (before any token transfer rule). */
async function quoteBuy(token: Address, value: bigint): Promise<bigint> {
  const amounts = await conn.publicClient.readContract({
    address: world.uniswap.router,
    abi: uniswapV2RouterAbi,
    functionName: 'getAmountsOut',
    args: [value, [world.uniswap.weth, token]],
  });
  return amounts[1]!;
}

/** ETH → token through the router; returns the pool's quote and what actually arrived. */
async function buy(wallet: DeployWallet, token: Address, value: bigint) {
  const quote = await quoteBuy(token, value);
  const before = await balanceOf(token, wallet.account.address);
  await mine(
    wallet.writeContract({
      address: world.uniswap.router,
      abi: uniswapV2RouterAbi,
      functionName: 'swapExactETHForTokensSupportingFeeOnTransferTokens',
      args: [0n, [world.uniswap.weth, token], wallet.account.address, maxUint256],
      value,
      gas: GAS,
    }),
  );
  return { quote, received: (await balanceOf(token, wallet.account.address)) - before };
}

/** `buy` expected to revert (mined, status reverted). */
function buyReverting(wallet: DeployWallet, token: Address, value: bigint) {
  return mineReverted(
    wallet.writeContract({
      address: world.uniswap.router,
      abi: uniswapV2RouterAbi,
      functionName: 'swapExactETHForTokensSupportingFeeOnTransferTokens',
      args: [0n, [world.uniswap.weth, token], wallet.account.address, maxUint256],
      value,
      gas: GAS,
    }),
  );
}

/** Approve the router, then token → ETH; `expect: 'revert'` mines the swap as a failed transaction. */
async function sell(
  wallet: DeployWallet,
  token: Address,
  amount: bigint,
  expectation: 'success' | 'revert' = 'success',
): Promise<bigint> {
  await mine(
    wallet.writeContract({
      address: token,
      abi: erc20Abi,
      functionName: 'approve',
      args: [world.uniswap.router, amount],
    }),
  );
  const ethBefore = await conn.publicClient.getBalance({ address: wallet.account.address });
  const swap = wallet.writeContract({
    address: world.uniswap.router,
    abi: uniswapV2RouterAbi,
    functionName: 'swapExactTokensForETHSupportingFeeOnTransferTokens',
    args: [amount, 0n, [token, world.uniswap.weth], wallet.account.address, maxUint256],
    gas: GAS,
  });
  const receipt = expectation === 'success' ? await mine(swap) : await mineReverted(swap);
  const ethAfter = await conn.publicClient.getBalance({ address: wallet.account.address });
  // ETH received, net of the swap's own gas.
  return ethAfter - ethBefore + receipt.gasUsed * receipt.effectiveGasPrice;
}

/** What the router simulation says when `token` → ETH is tried (the revert reason, or 'ok'). */
async function simulateSell(wallet: DeployWallet, token: Address, amount: bigint): Promise<string> {
  try {
    await conn.publicClient.simulateContract({
      account: wallet.account,
      address: world.uniswap.router,
      abi: uniswapV2RouterAbi,
      functionName: 'swapExactTokensForETHSupportingFeeOnTransferTokens',
      args: [amount, 0n, [token, world.uniswap.weth], wallet.account.address, maxUint256],
    });
    return 'ok';
  } catch (err) {
    return String(err);
  }
}

/** One line per ABI item, to compare an ABI written out with the artifact's. */
function itemKey(item: Abi[number]): string {
  type Param = { type: string; name?: string; indexed?: boolean };
  const params = (ps: readonly Param[] | undefined) =>
    (ps ?? []).map((p) => `${p.type}${p.indexed ? ' indexed' : ''} ${p.name ?? ''}`).join(', ');
  const name = 'name' in item ? item.name : '';
  const mutability = 'stateMutability' in item ? item.stateMutability : '';
  const outputs = 'outputs' in item ? params(item.outputs) : '';
  return `${item.type} ${name}(${'inputs' in item ? params(item.inputs) : ''}) ${mutability} -> (${outputs})`;
}

const POOLED: readonly PooledTokenName[] = [
  'clean',
  'mintable',
  'renounced',
  'pausable',
  'proxy',
  'fee',
  'honeypot',
  'blacklist',
  'timeBomb',
  'limits',
];

describe('the world', () => {
  it('is at the same addresses on every fresh anvil (dev account 0, fixed nonces)', async () => {
    const deployer = getAddress(anvil.accounts[0]!.address);
    expect(world.owner).toBe(deployer);
    expect(world.uniswap).toEqual({
      weth: getContractAddress({ from: deployer, nonce: 0n }),
      factory: getContractAddress({ from: deployer, nonce: 1n }),
      router: getContractAddress({ from: deployer, nonce: 2n }),
    });
    expect(world.uniswap).toEqual({
      weth: '0x5FbDB2315678afecb367f032d93F642f64180aa3',
      factory: '0xe7f1725E7734CE288F8367e1Bb143E90bb3F0512',
      router: '0x9fE46736679d2D9a65F0992F2272dE9f3c7fa6e0',
    });
    expect(world.tokens).toEqual({
      clean: '0xCf7Ed3AccA5a467e9e704C703E8D87F634fB0Fc9',
      noPool: '0xDc64a140Aa3E981100a9becA4E685f962f0cF6C9',
      mintable: '0x5FC8d32690cc91D4c39d9d3abcBD16989F875707',
      renounced: '0x0165878A594ca255338adfa4d48449f69242Eb8F',
      pausable: '0xa513E6E4b8f2a923D98304ec87F64353C4D5C853',
      proxyImplementation: '0x2279B7A0a67DB372996a5FaB50D91eAA73d2eBe6',
      proxy: '0x8A791620dd6260079BF849Dc5567aDC3F2FdC318',
      proxyAdmin: '0x8aCd85898458400f7Db866d53FCFF6f0D49741FF',
      fee: '0x610178dA211FEF7D417bC0e6FeD39F05609AD788',
      honeypot: '0xB7f8BC63BbcaD18155201308C8f3540b07f84F5e',
      blacklist: '0xA51c1fc2f0D1a1b8494Ed1FE312d7C3a78Ed91C0',
      timeBomb: '0x0DCd1Bf9A1b36cE34237eEaFef220932846BCD82',
      limits: '0x9A676e781A523b5d0C0e43731313A708CB607508',
    });
    expect(world.pairs).toEqual({
      clean: '0xDEDC0D7FCdFe17a09D69a34112EE8A1621BD83e0',
      mintable: '0xDde0cce78631444334ec932CF786E277A4d7333B',
      renounced: '0xeD088B3df4fCDB84B06f291910CCb09D23375174',
      pausable: '0xF4c09F1cD26271EcE37b0141Ac694E5aA8f45b97',
      proxy: '0x9c7509Ee7B6DFdBaC7b8E66F3f0C026e61c0220d',
      fee: '0x3C9658db0b35Cfe37f2F04aBdCf098FD8C2D8b22',
      honeypot: '0xF00A7e2595B02b6E2B4377184Ac6dd9aE3b1969e',
      blacklist: '0xb5F961eD9A1Fd98B72A406D7387887D399BB4EC0',
      timeBomb: '0xEe87EF52110e4A60Df3d8322690d41f0796145Ba',
      limits: '0xddEcc6553a14911F3a24597106b0cbf24dE8EAe2',
    });
    // 39 setup transactions, one block each.
    expect(world.blockNumber).toBe(39n);
    expect(await conn.publicClient.getTransactionCount({ address: deployer })).toBe(39);
  });

  it('every token: 18 decimals, its name and symbol, 1,000,000 minted to the owner', async () => {
    for (const name of Object.keys(TOKEN_METADATA) as TokenName[]) {
      const address = world.tokens[name];
      const read = <F extends 'name' | 'symbol' | 'decimals' | 'totalSupply'>(functionName: F) =>
        conn.publicClient.readContract({ address, abi: erc20Abi, functionName });
      expect(await read('name'), name).toBe(TOKEN_METADATA[name].name);
      expect(await read('symbol'), name).toBe(TOKEN_METADATA[name].symbol);
      expect(await read('decimals'), name).toBe(18);
      expect(await read('totalSupply'), name).toBe(TOKEN_SUPPLY);
      const pooled = name === 'noPool' ? 0n : POOL_LIQUIDITY.tokens;
      expect(await balanceOf(address, world.owner), name).toBe(TOKEN_SUPPLY - pooled);
    }
  });

  it('every pooled token has a WETH pair holding 100,000 tokens and 10 ETH; noPool has none', async () => {
    for (const name of POOLED) {
      const pair = world.pairs[name];
      const [token0, [reserve0, reserve1]] = await Promise.all([
        conn.publicClient.readContract({ address: pair, abi: uniswapV2PairAbi, functionName: 'token0' }),
        conn.publicClient.readContract({ address: pair, abi: uniswapV2PairAbi, functionName: 'getReserves' }),
      ]);
      const tokenIs0 = token0 === world.tokens[name];
      expect(tokenIs0 ? reserve0 : reserve1, name).toBe(POOL_LIQUIDITY.tokens);
      expect(tokenIs0 ? reserve1 : reserve0, name).toBe(POOL_LIQUIDITY.eth);
      expect(await balanceOf(world.uniswap.weth, pair), name).toBe(POOL_LIQUIDITY.eth);
    }
    expect(
      await conn.publicClient.readContract({
        address: world.uniswap.factory,
        abi: uniswapV2FactoryAbi,
        functionName: 'getPair',
        args: [world.tokens.noPool, world.uniswap.weth],
      }),
    ).toBe(zeroAddress);
    expect(
      await conn.publicClient.readContract({
        address: world.uniswap.factory,
        abi: uniswapV2FactoryAbi,
        functionName: 'allPairsLength',
      }),
    ).toBe(BigInt(POOLED.length));
  });
});

describe('Uniswap V2 from the npm artifacts', () => {
  it("the factory's pair code hashes to the init code hash the router has compiled in", async () => {
    expect(keccak256(uniswapV2Artifacts.pair.bytecode)).toBe(UNISWAP_V2_INIT_CODE_HASH);
    expect(uniswapV2Artifacts.router.bytecode).toContain(UNISWAP_V2_INIT_CODE_HASH.slice(2));
    for (const name of POOLED) {
      expect(uniswapV2PairAddress(world.uniswap.factory, world.tokens[name], world.uniswap.weth)).toBe(
        world.pairs[name],
      );
    }
    // The router found the pair by itself (it reads reserves at the address it computes).
    expect(await quoteBuy(world.tokens.clean, parseEther('1'))).toBeGreaterThan(0n);
  });

  it('the written-out ABIs are parts of the artifacts’ ABIs', () => {
    for (const [abi, art] of [
      [weth9Abi, uniswapV2Artifacts.weth],
      [uniswapV2FactoryAbi, uniswapV2Artifacts.factory],
      [uniswapV2PairAbi, uniswapV2Artifacts.pair],
      [uniswapV2RouterAbi, uniswapV2Artifacts.router],
    ] as const) {
      const published = art.abi.map(itemKey);
      for (const item of abi as Abi) expect(published).toContain(itemKey(item));
    }
  });
});

describe('the tokens, traded by a second account', () => {
  it('clean: the buy gets exactly the quote, and sells back', async () => {
    const { quote, received } = await buy(trader, world.tokens.clean, parseEther('0.1'));
    expect(received).toBe(quote);
    expect(await sell(trader, world.tokens.clean, received)).toBeGreaterThan(parseEther('0.099'));
  });

  it('fee: the buy arrives 5 % short, the 5 % goes to the owner', async () => {
    const ownerBefore = await balanceOf(world.tokens.fee, world.owner);
    const { quote, received } = await buy(trader, world.tokens.fee, parseEther('0.1'));
    const fee = (quote * FEE_BPS) / 10_000n;
    expect(received).toBe(quote - fee);
    expect(await balanceOf(world.tokens.fee, world.owner)).toBe(ownerBefore + fee);
    // Selling pays it too, and only the owner may change it.
    expect(await sell(trader, world.tokens.fee, received)).toBeGreaterThan(0n);
    await mineReverted(
      trader.writeContract({
        address: world.tokens.fee,
        abi: world.abis.fee,
        functionName: 'setFee',
        args: [0n],
        gas: GAS,
      }),
    );
  });

  it('honeypot: buys and wallet transfers work, sells revert, except the owner’s', async () => {
    const { quote, received } = await buy(trader, world.tokens.honeypot, parseEther('0.1'));
    expect(received).toBe(quote);
    await mine(
      trader.writeContract({
        address: world.tokens.honeypot,
        abi: erc20Abi,
        functionName: 'transfer',
        args: [friend, 1n],
      }),
    );
    expect(await balanceOf(world.tokens.honeypot, friend)).toBe(1n);

    expect(await simulateSell(trader, world.tokens.honeypot, received - 1n)).toMatch(/TRANSFER_FROM_FAILED/);
    await sell(trader, world.tokens.honeypot, received - 1n, 'revert');
    expect(await balanceOf(world.tokens.honeypot, trader.account.address)).toBe(received - 1n);
    // Sending to the pair directly is what is blocked.
    await expect(
      conn.publicClient.simulateContract({
        account: trader.account,
        address: world.tokens.honeypot,
        abi: world.abis.honeypot,
        functionName: 'transfer',
        args: [world.pairs.honeypot, 1n],
      }),
    ).rejects.toThrow(/TransferBlocked/);

    expect(await sell(owner, world.tokens.honeypot, parseUnits('1000', 18))).toBeGreaterThan(0n);
  });

  it('blacklist: a blacklisted account can neither send, sell nor receive', async () => {
    const { received } = await buy(trader, world.tokens.blacklist, parseEther('0.1'));
    await mine(
      owner.writeContract({
        address: world.tokens.blacklist,
        abi: world.abis.blacklist,
        functionName: 'blacklist',
        args: [trader.account.address],
      }),
    );
    await mineReverted(
      trader.writeContract({
        address: world.tokens.blacklist,
        abi: erc20Abi,
        functionName: 'transfer',
        args: [friend, 1n],
        gas: GAS,
      }),
    );
    await sell(trader, world.tokens.blacklist, received, 'revert');
    await buyReverting(trader, world.tokens.blacklist, parseEther('0.01'));
    await mineReverted(
      owner.writeContract({
        address: world.tokens.blacklist,
        abi: erc20Abi,
        functionName: 'transfer',
        args: [trader.account.address, 1n],
        gas: GAS,
      }),
    );
    expect(await balanceOf(world.tokens.blacklist, trader.account.address)).toBe(received);

    await mine(
      owner.writeContract({
        address: world.tokens.blacklist,
        abi: world.abis.blacklist,
        functionName: 'unblacklist',
        args: [trader.account.address],
      }),
    );
    expect(await sell(trader, world.tokens.blacklist, received)).toBeGreaterThan(0n);
  });

  it('mintable: the owner mints at will; renounced: owner() is zero and nobody can', async () => {
    const read = (token: Address) =>
      conn.publicClient.readContract({ address: token, abi: world.abis.mintable, functionName: 'owner' });
    expect(await read(world.tokens.mintable)).toBe(world.owner);
    expect(await read(world.tokens.renounced)).toBe(zeroAddress);

    await mine(
      owner.writeContract({
        address: world.tokens.mintable,
        abi: world.abis.mintable,
        functionName: 'mint',
        args: [friend, 5n],
      }),
    );
    expect(await balanceOf(world.tokens.mintable, friend)).toBe(5n);
    for (const [wallet, token] of [
      [trader, world.tokens.mintable],
      [owner, world.tokens.renounced],
    ] as const) {
      await mineReverted(
        wallet.writeContract({
          address: token,
          abi: world.abis.mintable,
          functionName: 'mint',
          args: [wallet.account.address, 5n],
          gas: GAS,
        }),
      );
    }
    expect(await buy(trader, world.tokens.renounced, parseEther('0.01'))).toMatchObject({
      received: expect.any(BigInt) as bigint,
    });
  });

  it('pausable: trading works until the owner pauses it', async () => {
    await buy(trader, world.tokens.pausable, parseEther('0.01'));
    await mine(
      owner.writeContract({
        address: world.tokens.pausable,
        abi: world.abis.pausable,
        functionName: 'pause',
      }),
    );
    await buyReverting(trader, world.tokens.pausable, parseEther('0.01'));
    await mine(
      owner.writeContract({
        address: world.tokens.pausable,
        abi: world.abis.pausable,
        functionName: 'unpause',
      }),
    );
    await buy(trader, world.tokens.pausable, parseEther('0.01'));
  });

  it('proxy: the EIP-1967 slots hold the implementation and the ProxyAdmin; trading goes through it', async () => {
    const slot = async (s: Hex) =>
      getAddress(
        `0x${((await conn.publicClient.getStorageAt({ address: world.tokens.proxy, slot: s })) ?? '').slice(-40)}`,
      );
    expect(await slot(EIP1967_IMPLEMENTATION_SLOT)).toBe(world.tokens.proxyImplementation);
    expect(await slot(EIP1967_ADMIN_SLOT)).toBe(world.tokens.proxyAdmin);
    // The ProxyAdmin is the proxy's first CREATE, owned by the world's owner.
    expect(world.tokens.proxyAdmin).toBe(getContractAddress({ from: world.tokens.proxy, nonce: 1n }));
    const admin = { address: world.tokens.proxyAdmin, abi: world.abis.proxyAdmin } as const;
    expect(await conn.publicClient.readContract({ ...admin, functionName: 'owner' })).toBe(world.owner);
    expect(
      await conn.publicClient.readContract({ ...admin, functionName: 'UPGRADE_INTERFACE_VERSION' }),
    ).toBe('5.0.0');

    const proxied = { address: world.tokens.proxy, abi: world.abis.proxy } as const;
    expect(await conn.publicClient.readContract({ ...proxied, functionName: 'owner' })).toBe(world.owner);
    // The implementation alone is inert: no name, no owner, no supply, no second initialize.
    const impl = { address: world.tokens.proxyImplementation, abi: world.abis.proxyImplementation } as const;
    expect(await conn.publicClient.readContract({ ...impl, functionName: 'name' })).toBe('');
    expect(await conn.publicClient.readContract({ ...impl, functionName: 'owner' })).toBe(zeroAddress);
    expect(await conn.publicClient.readContract({ ...impl, functionName: 'totalSupply' })).toBe(0n);
    await expect(
      conn.publicClient.simulateContract({
        ...impl,
        account: trader.account,
        functionName: 'initialize',
        args: ['x', 'x', trader.account.address, 1n],
      }),
    ).rejects.toThrow(/InvalidInitialization/);

    const { quote, received } = await buy(trader, world.tokens.proxy, parseEther('0.01'));
    expect(received).toBe(quote);
  });

  it('limits: trading is open, a buy over maxTxAmount reverts, a small one works', async () => {
    const limits = { address: world.tokens.limits, abi: world.abis.limits } as const;
    expect(await conn.publicClient.readContract({ ...limits, functionName: 'tradingOpen' })).toBe(true);
    expect(await conn.publicClient.readContract({ ...limits, functionName: 'maxTxAmount' })).toBe(
      TOKEN_LIMITS.maxTxAmount,
    );
    // 2 ETH buys ~16,600 tokens: over the 10,000 per transaction.
    expect(await quoteBuy(world.tokens.limits, parseEther('2'))).toBeGreaterThan(TOKEN_LIMITS.maxTxAmount);
    await buyReverting(trader, world.tokens.limits, parseEther('2'));
    const { quote, received } = await buy(trader, world.tokens.limits, parseEther('0.1'));
    expect(received).toBe(quote);
    expect(await sell(trader, world.tokens.limits, received)).toBeGreaterThan(0n);
  });

  // Last: it moves the chain's clock an hour on.
  it('time bomb: sells work now and revert an hour later (the owner still sells)', async () => {
    const { received } = await buy(trader, world.tokens.timeBomb, parseEther('0.2'));
    const half = received / 2n;
    expect(await sell(trader, world.tokens.timeBomb, half)).toBeGreaterThan(0n);

    const test = createTestClient({ mode: 'anvil', chain: conn.chain, transport: http(anvil.url) });
    await test.increaseTime({ seconds: 3600 });
    await test.mine({ blocks: 1 });

    expect(await simulateSell(trader, world.tokens.timeBomb, received - half)).toMatch(
      /TRANSFER_FROM_FAILED/,
    );
    await sell(trader, world.tokens.timeBomb, received - half, 'revert');
    expect(await balanceOf(world.tokens.timeBomb, trader.account.address)).toBe(received - half);
    expect(await sell(owner, world.tokens.timeBomb, parseUnits('1000', 18))).toBeGreaterThan(0n);
    // Buying still works: only the way out is closed.
    await buy(trader, world.tokens.timeBomb, parseEther('0.01'));
  });
});
