import { existsSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import {
  getAddress,
  getContract,
  parseEther,
  parseSignature,
  parseUnits,
  type Abi,
  type Address,
  type Hex,
} from 'viem';
import { privateKeyToAccount, type PrivateKeyAccount } from 'viem/accounts';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAnvil, type RunningAnvil } from '../support/evm/anvil.js';
import {
  collectibleAbi,
  connectAnvil,
  deployCollectible,
  deployPermitToken,
  deployRouter,
  deploySwap,
  permitTokenAbi,
  routerAbi,
  swapAbi,
  testContractAbis,
  type AnvilConnection,
  type DeployWallet,
} from '../support/evm/contracts.js';
import {
  compileContracts,
  projectRoot,
  solcCacheDir,
  type CompiledContracts,
} from '../support/evm/solidity.js';
import { tokenContractAbis } from '../support/evm/tokens.js';

/*
 * The Solidity test contracts, compiled by solc-js and deployed on a real anvil: what each is for (a
 * permit signed off-chain and submitted by the spender, a swap, a router pulling approved tokens and NFTs)
 * really happens on chain.
 */

let anvil: RunningAnvil;
let conn: AnvilConnection;
let compiled: CompiledContracts;
// Dev accounts: 0 deploys (and owns the router), 1 is the user, 2 a spender, 3 the drainer's wallet.
let deployer: DeployWallet;
let userAccount: PrivateKeyAccount;
let user: DeployWallet;
let spender: DeployWallet;
let stranger: DeployWallet;
let drain: Address;

beforeAll(async () => {
  compiled = await compileContracts();
  anvil = await startAnvil();
  conn = connectAnvil(anvil);
  const keys = anvil.accounts.map((a) => a.privateKey);
  deployer = conn.wallet(keys[0]!);
  userAccount = privateKeyToAccount(keys[1]!);
  user = conn.wallet(userAccount);
  spender = conn.wallet(keys[2]!);
  drain = getAddress(anvil.accounts[3]!.address);
  stranger = conn.wallet(keys[4]!);
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

const erc20 = (address: Address) => getContract({ address, abi: permitTokenAbi, client: conn.publicClient });
const erc721 = (address: Address) => getContract({ address, abi: collectibleAbi, client: conn.publicClient });

/** One line per ABI item (kind, name, parameter types and names, mutability), to compare two ABIs as sets. */
function sortedItems(abi: Abi): string[] {
  type Param = { type: string; name?: string; indexed?: boolean; components?: readonly Param[] };
  const param = (p: Param): string =>
    `${p.type.startsWith('tuple') ? `(${(p.components ?? []).map(param).join(',')})${p.type.slice(5)}` : p.type}` +
    `${p.indexed ? ' indexed' : ''} ${p.name ?? ''}`;
  const params = (ps: readonly Param[] | undefined): string => (ps ?? []).map(param).join(', ');
  return abi
    .map((item) => {
      const name = 'name' in item ? item.name : '';
      const inputs = 'inputs' in item ? params(item.inputs) : '';
      const mutability = 'stateMutability' in item ? item.stateMutability : '';
      const outputs = 'outputs' in item ? params(item.outputs) : '';
      return `${item.type} ${name}(${inputs}) ${mutability} -> (${outputs})`;
    })
    .sort();
}

describe('solc', () => {
  it('compiles every contract, each typed ABI being exactly the compiled one', () => {
    // contracts.ts has the first four, tokens.ts those of Tokens.sol (the token scanner's world); every
    // compiled contract has its typed ABI.
    const abis: Record<string, Abi> = { ...testContractAbis, ...tokenContractAbis };
    expect(Object.keys(compiled).sort()).toEqual(Object.keys(abis).sort());
    expect(Object.keys(abis)).toHaveLength(14);
    for (const [name, abi] of Object.entries(abis)) {
      const c = compiled[name]!;
      expect(sortedItems(c.abi), name).toEqual(sortedItems(abi));
      expect(c.bytecode, name).toMatch(/^0x([0-9a-f]{2})+$/);
      expect(c.deployedBytecode.length, name).toBeGreaterThan(100);
    }
  });

  it('a second compile reads the disk cache, which lies under node_modules/.cache', async () => {
    const started = performance.now();
    const again = await compileContracts();
    expect(performance.now() - started).toBeLessThan(1_000);
    expect(again).toEqual(compiled);
    expect(existsSync(solcCacheDir())).toBe(true);
    expect(readdirSync(solcCacheDir()).filter((f) => f.endsWith('.json')).length).toBeGreaterThan(0);
    expect(solcCacheDir()).toBe(join(projectRoot(), 'node_modules', '.cache', 'riskwatch-solc'));
  });
});

describe('PermitToken (ERC-20 + ERC-2612)', () => {
  let token: Address;
  beforeAll(async () => {
    token = await deployPermitToken(deployer, { name: 'Permit Token', symbol: 'PRMT', decimals: 18 });
    await mine(
      user.writeContract({
        address: token,
        abi: permitTokenAbi,
        functionName: 'mint',
        args: [userAccount.address, parseUnits('100', 18)],
      }),
    );
  });

  it('has the metadata it was deployed with, and anyone could mint', async () => {
    expect(await erc20(token).read.name()).toBe('Permit Token');
    expect(await erc20(token).read.symbol()).toBe('PRMT');
    expect(await erc20(token).read.decimals()).toBe(18);
    expect(await erc20(token).read.totalSupply()).toBe(parseUnits('100', 18));
    expect(await erc20(token).read.balanceOf([userAccount.address])).toBe(parseUnits('100', 18));
  });

  it('a permit signed off-chain by the user, submitted by the spender, sets the allowance', async () => {
    const value = parseUnits('25', 18);
    const block = await conn.publicClient.getBlock();
    const deadline = block.timestamp + 3600n;
    const nonce = await erc20(token).read.nonces([userAccount.address]);
    expect(nonce).toBe(0n);
    const [, domainName, domainVersion, domainChainId, verifyingContract] =
      await erc20(token).read.eip712Domain();
    expect([domainName, domainVersion, domainChainId, verifyingContract]).toEqual([
      'Permit Token',
      '1',
      BigInt(anvil.chainId),
      token,
    ]);

    const signature = await userAccount.signTypedData({
      domain: { name: 'Permit Token', version: '1', chainId: anvil.chainId, verifyingContract: token },
      types: {
        Permit: [
          { name: 'owner', type: 'address' },
          { name: 'spender', type: 'address' },
          { name: 'value', type: 'uint256' },
          { name: 'nonce', type: 'uint256' },
          { name: 'deadline', type: 'uint256' },
        ],
      },
      primaryType: 'Permit',
      message: {
        owner: userAccount.address,
        spender: spender.account.address,
        value,
        nonce,
        deadline,
      },
    });
    // permit takes the signature split into v (27/28), r, s.
    const { r, s, v, yParity } = parseSignature(signature);
    const permitArgs = [
      userAccount.address,
      spender.account.address,
      value,
      deadline,
      Number(v ?? 27n + BigInt(yParity)),
      r,
      s,
    ] as const;
    const userNonceBefore = await conn.publicClient.getTransactionCount({ address: userAccount.address });

    const receipt = await mine(
      spender.writeContract({
        address: token,
        abi: permitTokenAbi,
        functionName: 'permit',
        args: permitArgs,
      }),
    );
    expect(receipt.from.toLowerCase()).toBe(spender.account.address.toLowerCase());
    expect(await erc20(token).read.allowance([userAccount.address, spender.account.address])).toBe(value);
    expect(await erc20(token).read.nonces([userAccount.address])).toBe(1n);
    // The user sent nothing: the approval cost them no transaction.
    expect(await conn.publicClient.getTransactionCount({ address: userAccount.address })).toBe(
      userNonceBefore,
    );

    // The spender uses it.
    await mine(
      spender.writeContract({
        address: token,
        abi: permitTokenAbi,
        functionName: 'transferFrom',
        args: [userAccount.address, spender.account.address, value],
      }),
    );
    expect(await erc20(token).read.balanceOf([spender.account.address])).toBe(value);
    expect(await erc20(token).read.allowance([userAccount.address, spender.account.address])).toBe(0n);

    // A signature cannot be replayed (the nonce moved on).
    await expect(
      conn.publicClient.simulateContract({
        account: spender.account,
        address: token,
        abi: permitTokenAbi,
        functionName: 'permit',
        args: permitArgs,
      }),
    ).rejects.toThrow(/ERC2612InvalidSigner/);
  });
});

describe('Swap', () => {
  let token: Address;
  let swap: Address;
  const rate = 1000n;
  beforeAll(async () => {
    token = await deployPermitToken(deployer, { name: 'Swap Token', symbol: 'SWPT', decimals: 18 });
    swap = await deploySwap(deployer, { rate });
    // Funded: tokens to sell, ether to buy back with.
    await mine(
      deployer.writeContract({
        address: token,
        abi: permitTokenAbi,
        functionName: 'mint',
        args: [swap, parseUnits('1000000', 18)],
      }),
    );
    await mine(deployer.sendTransaction({ to: swap, value: parseEther('10') }));
  });

  it('has the rate it was deployed with', async () => {
    expect(await conn.publicClient.readContract({ address: swap, abi: swapAbi, functionName: 'rate' })).toBe(
      rate,
    );
  });

  it('buy: ether in, value × rate tokens out (an ERC-20 Transfer from the swap)', async () => {
    const value = parseEther('1');
    const ethBefore = await conn.publicClient.getBalance({ address: userAccount.address });
    const receipt = await mine(
      user.writeContract({ address: swap, abi: swapAbi, functionName: 'buy', args: [token], value }),
    );
    expect(await erc20(token).read.balanceOf([userAccount.address])).toBe(value * rate);
    expect(await conn.publicClient.getBalance({ address: userAccount.address })).toBe(
      ethBefore - value - receipt.gasUsed * receipt.effectiveGasPrice,
    );
    expect(await conn.publicClient.getBalance({ address: swap })).toBe(parseEther('11'));
    // Exactly one log: the token's Transfer (the swap emits nothing of its own).
    expect(receipt.logs.map((l) => l.address.toLowerCase())).toEqual([token.toLowerCase()]);
  });

  it('sell: tokens pulled with transferFrom (after approve), amount / rate wei back', async () => {
    const amount = parseUnits('500', 18);
    await mine(
      user.writeContract({
        address: token,
        abi: permitTokenAbi,
        functionName: 'approve',
        args: [swap, amount],
      }),
    );
    const ethBefore = await conn.publicClient.getBalance({ address: userAccount.address });
    const tokensBefore = await erc20(token).read.balanceOf([userAccount.address]);
    const receipt = await mine(
      user.writeContract({ address: swap, abi: swapAbi, functionName: 'sell', args: [token, amount] }),
    );
    expect(await erc20(token).read.balanceOf([userAccount.address])).toBe(tokensBefore - amount);
    expect(await conn.publicClient.getBalance({ address: userAccount.address })).toBe(
      ethBefore + amount / rate - receipt.gasUsed * receipt.effectiveGasPrice,
    );
  });
});

describe('Router (an approved spender; a drainer when its owner is malicious)', () => {
  let token: Address;
  let collection: Address;
  let router: Address;
  beforeAll(async () => {
    token = await deployPermitToken(deployer, { name: 'Router Token', symbol: 'RTRT', decimals: 6 });
    collection = await deployCollectible(deployer, { name: 'Collectible', symbol: 'CLCT' });
    router = await deployRouter(deployer);
    await mine(
      user.writeContract({
        address: token,
        abi: permitTokenAbi,
        functionName: 'mint',
        args: [userAccount.address, parseUnits('1000', 6)],
      }),
    );
  });

  it('is owned by its deployer', async () => {
    expect(
      await conn.publicClient.readContract({ address: router, abi: routerAbi, functionName: 'owner' }),
    ).toBe(deployer.account.address);
  });

  it('runs the code solc produced (no immutables, so the runtime code is byte for byte)', async () => {
    expect(await conn.publicClient.getCode({ address: router })).toBe(compiled.Router!.deployedBytecode);
    expect(await conn.publicClient.getCode({ address: collection })).toBe(
      compiled.Collectible!.deployedBytecode,
    );
  });

  it('pull: the owner moves tokens the user approved to any address; nobody else may', async () => {
    const amount = parseUnits('300', 6);
    await mine(
      user.writeContract({
        address: token,
        abi: permitTokenAbi,
        functionName: 'approve',
        args: [router, amount],
      }),
    );
    await expect(
      conn.publicClient.simulateContract({
        account: stranger.account,
        address: router,
        abi: routerAbi,
        functionName: 'pull',
        args: [token, userAccount.address, stranger.account.address, amount],
      }),
    ).rejects.toThrow(/NotAllowed/);

    await mine(
      deployer.writeContract({
        address: router,
        abi: routerAbi,
        functionName: 'pull',
        args: [token, userAccount.address, drain, amount],
      }),
    );
    expect(await erc20(token).read.balanceOf([drain])).toBe(amount);
    expect(await erc20(token).read.balanceOf([userAccount.address])).toBe(parseUnits('700', 6));
    expect(await erc20(token).read.allowance([userAccount.address, router])).toBe(0n);
  });

  it('pull: a user moves their own approved tokens through it', async () => {
    const amount = parseUnits('10', 6);
    await mine(
      user.writeContract({
        address: token,
        abi: permitTokenAbi,
        functionName: 'approve',
        args: [router, amount],
      }),
    );
    await mine(
      user.writeContract({
        address: router,
        abi: routerAbi,
        functionName: 'pull',
        args: [token, userAccount.address, stranger.account.address, amount],
      }),
    );
    expect(await erc20(token).read.balanceOf([stranger.account.address])).toBe(amount);
  });

  it('pullNft: mint, setApprovalForAll(router), and the owner takes the NFT', async () => {
    await mine(
      stranger.writeContract({
        address: collection,
        abi: collectibleAbi,
        functionName: 'mint',
        args: [userAccount.address, 7n],
      }),
    );
    expect(await erc721(collection).read.ownerOf([7n])).toBe(userAccount.address);
    await mine(
      user.writeContract({
        address: collection,
        abi: collectibleAbi,
        functionName: 'setApprovalForAll',
        args: [router, true],
      }),
    );
    expect(
      await conn.publicClient.readContract({
        address: collection,
        abi: collectibleAbi,
        functionName: 'isApprovedForAll',
        args: [userAccount.address, router],
      }),
    ).toBe(true);
    await expect(
      conn.publicClient.simulateContract({
        account: stranger.account,
        address: router,
        abi: routerAbi,
        functionName: 'pullNft',
        args: [collection, userAccount.address, stranger.account.address, 7n],
      }),
    ).rejects.toThrow(/NotAllowed/);

    await mine(
      deployer.writeContract({
        address: router,
        abi: routerAbi,
        functionName: 'pullNft',
        args: [collection, userAccount.address, drain, 7n],
      }),
    );
    expect(await erc721(collection).read.ownerOf([7n])).toBe(drain);
    expect(await erc721(collection).read.balanceOf([userAccount.address])).toBe(0n);
  });
});
