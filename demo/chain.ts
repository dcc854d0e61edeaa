import { createNoopSigner, type Address } from '@solana/kit';
import { AuthorityType, getSetAuthorityInstruction } from '@solana-program/token';
import { encodeFunctionData, maxUint256, numberToHex, type Address as Address0x } from 'viem';
import { startAnvil, type RunningAnvil } from '../test/support/evm/anvil.js';
import {
  connectAnvil,
  deployPermitToken,
  deploySwap,
  permitTokenAbi,
  swapAbi,
} from '../test/support/evm/contracts.js';
import { buildEvmWorld } from '../test/support/evm/fixtures.js';
import { permit2TypedData } from '../test/support/evm/typed-data.js';
import type { SolanaFacade } from '../test/support/solana/facade.js';
import { buildSolanaWorld, type SolanaWorld } from '../test/support/solana/fixtures.js';
import { associatedTokenAddress, createMint, mintToOwners } from '../test/support/solana/token.js';
import { buildWireTransaction } from '../test/support/solana/wire.js';

/*
 * The demo chain: a Solana JSON-RPC served from LiteSVM state and an anvil node, both on loopback, preloaded
 * by real transactions (the same world builders as the tests: test/support/solana, test/support/evm) with a
 * small, named set of targets that show the engine's range. It is a simulation: riskwatch sees it as the
 * networks `solana/demo` and `ethereum/demo`, never as mainnet.
 */

/** The anvil chain id of the demo (anvil's own default): not a public chain's id. */
export const DEMO_EVM_CHAIN_ID = 31337;
/** The CAIP-2 id riskwatch gives the demo Solana cluster (no real cluster has this genesis prefix). */
export const DEMO_SOLANA_CAIP2 = 'solana:riskwatch-demo';

export type DemoChain = 'solana' | 'ethereum';

export interface DemoTarget {
  /** Stable name, used in the examples and the README. */
  name: string;
  chain: DemoChain;
  address: string;
  /** What it is, in a few words (printed in the banner). */
  what: string;
}

/** A payload the banner shows (shield preflight "before the user signs"): the body, minus the intent. */
export interface DemoPayload {
  name: string;
  chain: DemoChain;
  intent: string;
  /** `from` and one of `transaction` / `typed_data` / `message`. */
  body: Record<string, unknown>;
  /** The decision the engine reaches on it. */
  decision: 'allow' | 'warn' | 'block';
  what: string;
}

export interface RunningDemoChain {
  solanaUrl: string;
  evmUrl: string;
  targets: readonly DemoTarget[];
  payloads: readonly DemoPayload[];
  close(): Promise<void>;
}

export interface DemoChainOptions {
  /** Default 8899 (a Solana validator's RPC port); 0 picks a free one. */
  solanaPort?: number;
  /** Default 8545 (anvil's own); 0 picks a free one. */
  evmPort?: number;
}

const DECIMALS = 6;
const tokens = (n: number): bigint => BigInt(n) * 10n ** BigInt(DECIMALS);

/** Start both chains, build their state, and name the targets. Takes a few seconds. */
export async function startDemoChain(options: DemoChainOptions = {}): Promise<RunningDemoChain> {
  const world = await buildSolanaWorld();
  const solanaExtras = await buildSolanaExtras(world);
  let facade: SolanaFacade | undefined;
  let anvil: RunningAnvil | undefined;
  try {
    facade = await world.startFacade(options.solanaPort ?? 8899);
    anvil = await startAnvil({ chainId: DEMO_EVM_CHAIN_ID, port: options.evmPort ?? 8545 });
    const evm = (await buildEvmWorld(anvil.url)).fixtures;
    const m = world.fixtures.mints;
    const targets: DemoTarget[] = [
      sol('stablecoin', m.usdc.address, "USDC's mint address, held by its issuer's expected authorities"),
      sol('rug-token', solanaExtras.rugToken, 'live mint and freeze authorities, one wallet holds 70%'),
      sol('trap-token', solanaExtras.trapToken, 'Token-2022 with a permanent delegate and a transfer hook'),
      sol('copycat-token', m.copycatUsdc.address, 'another mint whose metadata says USD Coin / USDC'),
      sol('clean-token', m.cleanToken.address, 'fixed supply, no freeze authority, spread holders'),
      sol(
        'delegated-wallet',
        world.fixtures.wallets.delegatedWallet.address,
        'a wallet whose token account has a delegate',
      ),
      sol('old-wallet', world.fixtures.wallets.oldWallet.address, 'a wallet active for 400 days'),
      evmTarget(
        'delegated-eoa',
        evm.delegatedToMalicious.address,
        'an EOA delegated (EIP-7702) to a sweeper contract',
      ),
      evmTarget('proxy', evm.proxy.address, 'an EIP-1967 upgradeable proxy'),
      evmTarget('fresh-address', evm.freshAddress.address, 'an address with no transaction and no balance'),
      evmTarget('funded-eoa', evm.fundedEoa.address, 'an ordinary funded wallet'),
    ];
    const payloads = [
      ...(await buildEvmPayloads(anvil, evm.fundedEoa.address, evm.freshAddress.address)),
      await solanaOwnerHandOver(world, solanaExtras.rugToken),
    ];
    const running = { facade, anvil };
    return {
      solanaUrl: facade.url,
      evmUrl: anvil.url,
      targets,
      payloads,
      async close() {
        await Promise.allSettled([running.facade.close(), running.anvil.stop()]);
      },
    };
  } catch (err) {
    await Promise.allSettled([facade?.close(), anvil?.stop()]);
    throw err;
  }
}

const sol = (name: string, a: string, what: string): DemoTarget => ({
  name,
  chain: 'solana',
  address: a,
  what,
});
const evmTarget = (name: string, a: string, what: string): DemoTarget => ({
  name,
  chain: 'ethereum',
  address: a,
  what,
});

/**
 * Two mints the test world does not have, because the tests want one property per fixture and the demo
 * wants a few properties together: a rug-style token (both authorities live, one wallet holding 70%) and a
 * trap (a permanent delegate and a transfer hook on the same Token-2022 mint).
 */
async function buildSolanaExtras(world: SolanaWorld): Promise<{ rugToken: Address; trapToken: Address }> {
  const { chain, actors } = world;
  const rugAuthority = await chain.signer('demo:rug-authority');
  const rugToken = await createMint(chain, {
    name: 'demo:rug-token',
    program: 'token',
    decimals: DECIMALS,
    mintAuthority: rugAuthority,
    freezeAuthority: rugAuthority.address,
  });
  await mintToOwners(chain, {
    kind: 'token',
    mint: rugToken,
    mintAuthority: rugAuthority,
    holdings: [
      { owner: actors.whale, amount: tokens(700_000) },
      ...actors.holders.slice(0, 10).map((owner) => ({ owner, amount: tokens(30_000) })),
    ],
  });

  const trapAuthority = await chain.signer('demo:trap-authority');
  const trapToken = await createMint(chain, {
    name: 'demo:trap-token',
    program: 'token-2022',
    decimals: DECIMALS,
    mintAuthority: trapAuthority,
    freezeAuthority: null,
    extensions: [
      { __kind: 'PermanentDelegate', delegate: trapAuthority.address },
      {
        __kind: 'TransferHook',
        authority: trapAuthority.address,
        programId: world.fixtures.program.address,
      },
    ],
  });
  await mintToOwners(chain, {
    kind: 'token-2022',
    mint: trapToken,
    mintAuthority: trapAuthority,
    holdings: actors.holders.slice(0, 20).map((owner) => ({ owner, amount: tokens(50_000) })),
  });
  return { rugToken, trapToken };
}

/**
 * The EVM payloads: a token (OpenZeppelin ERC-20 with permit) and a swap deployed from real Solidity, then an
 * unlimited approve of the token to an EOA, a Permit2 signature of the max to the same EOA (the signature
 * drainers ask for), and a swap of ETH for the token.
 */
async function buildEvmPayloads(
  anvil: RunningAnvil,
  user: Address0x,
  drainer: Address0x,
): Promise<DemoPayload[]> {
  const chain = connectAnvil(anvil);
  const deployer = chain.wallet(anvil.accounts[0]!.privateKey);
  const token = await deployPermitToken(deployer, { name: 'Demo Dollar', symbol: 'DUSD', decimals: 18 });
  const swap = await deploySwap(deployer, { rate: 2000n });
  const mint = (to: Address0x, amount: bigint) =>
    deployer
      .writeContract({ address: token, abi: permitTokenAbi, functionName: 'mint', args: [to, amount] })
      .then((hash) => chain.publicClient.waitForTransactionReceipt({ hash }));
  await mint(swap, 10n ** 30n);
  await mint(user, 5_000n * 10n ** 18n);
  const evm = (
    name: string,
    intent: string,
    body: Record<string, unknown>,
    decision: DemoPayload['decision'],
    what: string,
  ): DemoPayload => ({
    name,
    chain: 'ethereum',
    intent,
    body: { from: user, ...body },
    decision,
    what,
  });
  const approve = encodeFunctionData({
    abi: permitTokenAbi,
    functionName: 'approve',
    args: [drainer, maxUint256],
  });
  const buy = encodeFunctionData({ abi: swapAbi, functionName: 'buy', args: [token] });
  return [
    evm(
      'unlimited-approve-to-eoa',
      'approve',
      { transaction: { from: user, to: token, data: approve } },
      'block',
      'an unlimited approve of DUSD to an EOA',
    ),
    evm(
      'permit2-drain-signature',
      'sign',
      {
        typed_data: permit2TypedData({
          chainId: DEMO_EVM_CHAIN_ID,
          spender: drainer,
          details: [{ token, amount: 2n ** 160n - 1n, expiration: 1_893_456_000 }],
          sigDeadline: 1_893_456_000,
        }),
      },
      'block',
      'a Permit2 signature giving an EOA all of your DUSD',
    ),
    evm(
      'swap',
      'interact',
      { transaction: { from: user, to: swap, data: buy, value: numberToHex(10n ** 17n) } },
      'allow',
      'a swap of 0.1 ETH for DUSD',
    ),
  ];
}

/** A Solana wire transaction (unsigned, as a wallet receives it) handing the whale's token account to another key. */
async function solanaOwnerHandOver(world: SolanaWorld, mint: Address): Promise<DemoPayload> {
  const owner = world.actors.whale;
  const tokenAccount = await associatedTokenAddress('token', mint, owner);
  const stranger = (await world.chain.signer('demo:stranger')).address;
  const transaction = await buildWireTransaction({
    feePayer: owner,
    version: 'legacy',
    blockhash: '11111111111111111111111111111111',
    instructions: [
      getSetAuthorityInstruction({
        owned: tokenAccount,
        owner: createNoopSigner(owner),
        authorityType: AuthorityType.AccountOwner,
        newAuthority: stranger,
      }),
    ],
  });
  return {
    name: 'solana-owner-hand-over',
    chain: 'solana',
    intent: 'sign',
    body: { from: owner, transaction },
    decision: 'block',
    what: "a transaction handing the whale's token account to another key",
  };
}
