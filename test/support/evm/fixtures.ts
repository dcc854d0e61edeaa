import {
  createPublicClient,
  createWalletClient,
  defineChain,
  getAddress,
  http,
  keccak256,
  parseEther,
  toHex,
  type Address,
  type Chain,
  type Hex,
  type SignedAuthorizationList,
  type TransactionReceipt,
} from 'viem';
import { mnemonicToAccount, privateKeyToAccount, type LocalAccount } from 'viem/accounts';
import { ANVIL_MNEMONIC } from './anvil.js';
import {
  eip1967ProxyInitCode,
  eip1967ProxyRuntime,
  identityResult,
  identityRuntime,
  initCode,
} from './bytecode.js';

/*
 * The EVM world the risk checks are tested against, made of REAL transactions on a fresh anvil: contracts
 * deployed from init code, a proxy whose constructor writes the EIP-1967 slots, EOAs delegated by real
 * EIP-7702 set-code transactions. Every address is deterministic (dev accounts from a fixed mnemonic,
 * fixture keys derived from their names, contract addresses from deployer + nonce), so the catalogue is
 * the same on every run; expected balances are computed from the receipts, to the wei.
 */

export type EvmFixtureName =
  | 'deployer'
  | 'fundedEoa'
  | 'freshAddress'
  | 'plainContract'
  | 'proxy'
  | 'proxyImplementation'
  | 'walletImplementation'
  | 'delegatedWallet'
  | 'maliciousDelegate'
  | 'delegatedToMalicious'
  | 'sanctioned'
  | 'denylisted'
  | 'allowlisted'
  | 'lookalike';

/** What `eth_getCode` shows: nothing, contract code, or an EIP-7702 delegation designator. */
export type EvmFixtureKind = 'eoa' | 'contract' | 'delegated_eoa';

export interface EvmFixture {
  readonly name: EvmFixtureName;
  /** Checksummed. */
  readonly address: Address;
  readonly kind: EvmFixtureKind;
  /** What a test uses it for. */
  readonly purpose: string;
  /** Expected `eth_getTransactionCount` at `world.blockNumber`. */
  readonly nonce: number;
  /** Expected `eth_getBalance` at `world.blockNumber`, in wei. */
  readonly balance: bigint;
  /** Expected `eth_getCode`, lowercase (`0x` for an account without code). */
  readonly code: Hex;
  /** nonce 0 and balance 0 (what `fresh_address` means). */
  readonly fresh: boolean;
  /** For a `delegated_eoa`: the 7702 delegate (checksummed). */
  readonly delegate?: Address;
  /** For an EIP-1967 proxy: the slot contents. */
  readonly proxy?: { readonly implementation: Address; readonly admin: Address };
  /** Expected `eth_call` result with empty calldata (for accounts with code), lowercase. */
  readonly callResult?: Hex;
  /** Present where a test may need to sign as this account. */
  readonly privateKey?: Hex;
  /** The transaction that made it what it is: a contract's deployment, a 7702 EOA's set-code (type 4). */
  readonly tx?: Hex;
}

export interface EvmWorld {
  readonly url: string;
  readonly chainId: number;
  /** Head block once every setup transaction is mined; every expectation holds at this block. */
  readonly blockNumber: bigint;
  readonly fixtures: { readonly [K in EvmFixtureName]: EvmFixture };
}

export interface BuildEvmWorldOptions {
  /** The mnemonic anvil was started with (default: anvil's own). */
  mnemonic?: string;
}

/** A name-derived key: deterministic (stable addresses) and unrelated to any funded dev account. */
function labelKey(label: string): Hex {
  return keccak256(toHex(`riskwatch:test-fixture:${label}`));
}
function labelAddress(label: string): Address {
  return getAddress(`0x${labelKey(label).slice(-40)}`);
}
function magic(label: string): Hex {
  return keccak256(toHex(`riskwatch:test-magic:${label}`));
}

/**
 * Address B for address-poisoning tests: same first 4 and last 4 hex characters as `a` (what a wallet UI
 * shows when it abbreviates `0x1234…abcd`), a different middle.
 */
export function lookalikeOf(a: Address, label = 'lookalike'): Address {
  const hex = a.slice(2).toLowerCase();
  let middle = labelKey(label).slice(2, 2 + 32);
  if (middle === hex.slice(4, 36)) middle = labelKey(`${label}:again`).slice(2, 2 + 32);
  return getAddress(`0x${hex.slice(0, 4)}${middle}${hex.slice(36)}`);
}

async function rpc<T>(url: string, method: string, params: unknown[]): Promise<T> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error || body.result === undefined)
    throw new Error(`${method}: ${body.error?.message ?? res.status}`);
  return body.result;
}

/**
 * Build the world on a FRESH anvil (block 0; `startAnvil()` output). About a dozen transactions, each
 * mined on submission by anvil's automine, so this takes well under a second.
 */
export async function buildEvmWorld(url: string, opts: BuildEvmWorldOptions = {}): Promise<EvmWorld> {
  const head = BigInt(await rpc<Hex>(url, 'eth_blockNumber', []));
  if (head !== 0n) throw new Error(`buildEvmWorld needs a fresh anvil (block 0), this one is at ${head}`);
  const chainId = Number(await rpc<Hex>(url, 'eth_chainId', []));
  const chain: Chain = defineChain({
    id: chainId,
    name: 'anvil (riskwatch tests)',
    nativeCurrency: { name: 'Ether', symbol: 'ETH', decimals: 18 },
    rpcUrls: { default: { http: [url] } },
  });
  // Anvil mines on submission; the default 4 s polling would only slow the receipt waits down.
  const transport = http(url, { retryCount: 0 });
  const publicClient = createPublicClient({ chain, transport, pollingInterval: 20 });

  const mnemonic = opts.mnemonic ?? ANVIL_MNEMONIC;
  const deployer = mnemonicToAccount(mnemonic, { addressIndex: 0 });
  const fundedEoa = mnemonicToAccount(mnemonic, { addressIndex: 1 });
  const delegatedWallet = privateKeyToAccount(labelKey('delegatedWallet'));
  const delegatedToMalicious = privateKeyToAccount(labelKey('delegatedToMalicious'));

  // Expected state = state at block 0 + what each receipt says happened (value, gas × price, nonces).
  const balances = new Map<string, bigint>();
  const nonces = new Map<string, number>();
  const key = (a: Address): string => a.toLowerCase();
  for (const a of [deployer.address, fundedEoa.address]) {
    balances.set(key(a), await publicClient.getBalance({ address: a }));
  }
  const addBalance = (a: Address, delta: bigint): void => {
    balances.set(key(a), (balances.get(key(a)) ?? 0n) + delta);
  };
  const bumpNonce = (a: Address): void => {
    nonces.set(key(a), (nonces.get(key(a)) ?? 0) + 1);
  };

  const send = async (
    from: LocalAccount,
    tx: { to?: Address; value?: bigint; data?: Hex; authorizationList?: SignedAuthorizationList },
    authorities: readonly Address[] = [],
  ): Promise<TransactionReceipt> => {
    const wallet = createWalletClient({ account: from, chain, transport });
    const hash = await wallet.sendTransaction({ account: from, chain, ...tx });
    const receipt = await publicClient.waitForTransactionReceipt({ hash, timeout: 10_000 });
    if (receipt.status !== 'success')
      throw new Error(`setup transaction ${hash} from ${from.address} reverted`);
    const value = tx.value ?? 0n;
    addBalance(from.address, -(value + receipt.gasUsed * receipt.effectiveGasPrice));
    bumpNonce(from.address);
    const to = tx.to ?? receipt.contractAddress;
    if (to) addBalance(to, value);
    // A valid authorization bumps its signer's nonce (after the sender's, when they are the same); the
    // signer is not in the signed tuple (it is recovered), so the caller names it.
    for (const authority of authorities) bumpNonce(authority);
    return receipt;
  };
  const deploy = async (code: Hex): Promise<{ address: Address; tx: Hex }> => {
    const receipt = await send(deployer, { data: code });
    if (!receipt.contractAddress) throw new Error('deployment produced no contract address');
    bumpNonce(receipt.contractAddress); // EIP-161: a contract is created with nonce 1
    return { address: getAddress(receipt.contractAddress), tx: receipt.transactionHash };
  };

  // Contracts: each returns abi.encode(magic, address(this)) so a call shows which code ran, and where.
  const magics = {
    plainContract: magic('plainContract'),
    proxyImplementation: magic('proxyImplementation'),
    walletImplementation: magic('walletImplementation'),
    maliciousDelegate: magic('maliciousDelegate'),
  };
  const runtimes = {
    plainContract: identityRuntime(magics.plainContract),
    proxyImplementation: identityRuntime(magics.proxyImplementation),
    walletImplementation: identityRuntime(magics.walletImplementation),
    maliciousDelegate: identityRuntime(magics.maliciousDelegate),
  };
  const deployed = {
    plainContract: await deploy(initCode(runtimes.plainContract)),
    proxyImplementation: await deploy(initCode(runtimes.proxyImplementation)),
  };
  const proxyAdmin = deployer.address;
  const proxyDeployment = await deploy(
    eip1967ProxyInitCode(deployed.proxyImplementation.address, proxyAdmin),
  );
  const delegates = {
    walletImplementation: await deploy(initCode(runtimes.walletImplementation)),
    maliciousDelegate: await deploy(initCode(runtimes.maliciousDelegate)),
  };
  const plainContract = deployed.plainContract.address;
  const proxyImplementation = deployed.proxyImplementation.address;
  const proxy = proxyDeployment.address;
  const walletImplementation = delegates.walletImplementation.address;
  const maliciousDelegate = delegates.maliciousDelegate.address;

  // 7702, self-executed: the EOA pays for its own set-code transaction; its authorization must carry
  // nonce + 1 because the sender's nonce is bumped before authorizations are processed (viem's
  // `executor: 'self'` does exactly that).
  await send(deployer, { to: delegatedWallet.address, value: parseEther('1') });
  const walletClient = createWalletClient({ account: delegatedWallet, chain, transport });
  const selfAuth = await walletClient.signAuthorization({
    account: delegatedWallet,
    contractAddress: walletImplementation,
    executor: 'self',
  });
  const selfDelegation = await send(
    delegatedWallet,
    { to: delegatedWallet.address, authorizationList: [selfAuth] },
    [delegatedWallet.address],
  );

  // 7702, sponsored: a key that never held ETH signs the authorization, someone else submits it (how
  // drainer kits get victims to "upgrade" their wallet).
  const sponsoredAuth = await createWalletClient({
    account: delegatedToMalicious,
    chain,
    transport,
  }).signAuthorization({ account: delegatedToMalicious, contractAddress: maliciousDelegate });
  const sponsoredDelegation = await send(
    deployer,
    { to: delegatedToMalicious.address, authorizationList: [sponsoredAuth] },
    [delegatedToMalicious.address],
  );

  // Address poisoning: the allow-listed counterparty and a lookalike that the attacker "warms up" so it
  // has history (balance) like a real poisoning address; both paid by the funded EOA, which so also gets
  // a nonce > 0.
  const allowlisted = labelAddress('allowlisted');
  const lookalike = lookalikeOf(allowlisted);
  await send(fundedEoa, { to: allowlisted, value: parseEther('1') });
  await send(fundedEoa, { to: lookalike, value: parseEther('0.001') });

  // List entries are service data; the addresses get a balance so that they are not ALSO fresh, which
  // lets a test see the list finding alone.
  const sanctioned = labelAddress('sanctioned');
  const denylisted = labelAddress('denylisted');
  await send(deployer, { to: sanctioned, value: parseEther('1') });
  await send(deployer, { to: denylisted, value: parseEther('1') });

  const freshAddress = labelAddress('freshAddress');
  const blockNumber = await publicClient.getBlockNumber({ cacheTime: 0 });

  const designator = (delegate: Address): Hex => `0xef0100${delegate.slice(2).toLowerCase()}`;
  const fixture = (
    name: EvmFixtureName,
    address: Address,
    kind: EvmFixtureKind,
    purpose: string,
    extra: Partial<Pick<EvmFixture, 'code' | 'delegate' | 'proxy' | 'callResult' | 'privateKey' | 'tx'>> = {},
  ): EvmFixture => {
    const nonce = nonces.get(key(address)) ?? 0;
    const balance = balances.get(key(address)) ?? 0n;
    return {
      name,
      address,
      kind,
      purpose,
      nonce,
      balance,
      code: extra.code ?? '0x',
      fresh: nonce === 0 && balance === 0n,
      ...extra,
    };
  };
  const devKey = (account: typeof deployer): Hex => toHex(account.getHdKey().privateKey ?? new Uint8Array());

  const fixtures: EvmWorld['fixtures'] = {
    deployer: fixture(
      'deployer',
      deployer.address,
      'eoa',
      'dev account 0: deployed everything; proxy admin',
      {
        privateKey: devKey(deployer),
      },
    ),
    fundedEoa: fixture('fundedEoa', fundedEoa.address, 'eoa', 'ordinary wallet with history (nonce > 0)', {
      privateKey: devKey(fundedEoa),
    }),
    freshAddress: fixture(
      'freshAddress',
      freshAddress,
      'eoa',
      'never used: nonce 0, balance 0 (fresh_address)',
    ),
    plainContract: fixture('plainContract', plainContract, 'contract', 'non-proxy contract (is_contract)', {
      code: runtimes.plainContract,
      callResult: identityResult(magics.plainContract, plainContract),
      tx: deployed.plainContract.tx,
    }),
    proxy: fixture(
      'proxy',
      proxy,
      'contract',
      'EIP-1967 proxy, slots set by its constructor (upgradeable_proxy)',
      {
        code: eip1967ProxyRuntime(), // what its init code returned
        proxy: { implementation: proxyImplementation, admin: proxyAdmin },
        // DELEGATECALL: the implementation's code runs with the proxy as address(this).
        callResult: identityResult(magics.proxyImplementation, proxy),
        tx: proxyDeployment.tx,
      },
    ),
    proxyImplementation: fixture(
      'proxyImplementation',
      proxyImplementation,
      'contract',
      "the proxy's logic",
      {
        code: runtimes.proxyImplementation,
        callResult: identityResult(magics.proxyImplementation, proxyImplementation),
        tx: deployed.proxyImplementation.tx,
      },
    ),
    walletImplementation: fixture(
      'walletImplementation',
      walletImplementation,
      'contract',
      '7702 delegate to register as a known wallet implementation (eip7702_delegated → info)',
      {
        code: runtimes.walletImplementation,
        callResult: identityResult(magics.walletImplementation, walletImplementation),
        tx: delegates.walletImplementation.tx,
      },
    ),
    delegatedWallet: fixture(
      'delegatedWallet',
      delegatedWallet.address,
      'delegated_eoa',
      'EOA that delegated itself (self-paid type-4 tx) to walletImplementation',
      {
        code: designator(walletImplementation),
        delegate: walletImplementation,
        // The delegate's code runs in the EOA's context.
        callResult: identityResult(magics.walletImplementation, delegatedWallet.address),
        privateKey: labelKey('delegatedWallet'),
        tx: selfDelegation.transactionHash,
      },
    ),
    maliciousDelegate: fixture(
      'maliciousDelegate',
      maliciousDelegate,
      'contract',
      '7702 delegate to deny-list (eip7702_delegated → critical)',
      {
        code: runtimes.maliciousDelegate,
        callResult: identityResult(magics.maliciousDelegate, maliciousDelegate),
        tx: delegates.maliciousDelegate.tx,
      },
    ),
    delegatedToMalicious: fixture(
      'delegatedToMalicious',
      delegatedToMalicious.address,
      'delegated_eoa',
      'EOA delegated to maliciousDelegate by a sponsored type-4 tx (balance 0, nonce 1)',
      {
        code: designator(maliciousDelegate),
        delegate: maliciousDelegate,
        callResult: identityResult(magics.maliciousDelegate, delegatedToMalicious.address),
        privateKey: labelKey('delegatedToMalicious'),
        tx: sponsoredDelegation.transactionHash,
      },
    ),
    sanctioned: fixture('sanctioned', sanctioned, 'eoa', 'put on the sanctions list (sanctioned_address)'),
    denylisted: fixture('denylisted', denylisted, 'eoa', "put on an account's deny list (org_denylisted)"),
    allowlisted: fixture(
      'allowlisted',
      allowlisted,
      'eoa',
      'allow-listed counterparty A (lookalike_address)',
    ),
    lookalike: fixture(
      'lookalike',
      lookalike,
      'eoa',
      'B: same first 4 / last 4 hex as allowlisted, has history',
    ),
  };
  return { url, chainId, blockNumber, fixtures };
}
