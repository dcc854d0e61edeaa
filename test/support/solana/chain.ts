import { createHash } from 'node:crypto';
import {
  address,
  appendTransactionMessageInstructions,
  createKeyPairSignerFromPrivateKeyBytes,
  createTransactionMessage,
  getAddressEncoder,
  getCompiledTransactionMessageDecoder,
  getSignatureFromTransaction,
  getTransactionEncoder,
  lamports,
  pipe,
  setTransactionMessageFeePayerSigner,
  setTransactionMessageLifetimeUsingBlockhash,
  signTransactionMessageWithSigners,
  type Address,
  type EncodedAccount,
  type Instruction,
  type KeyPairSigner,
  type ReadonlyUint8Array,
  type Signature,
} from '@solana/kit';
import { FailedTransactionMetadata, LiteSVM } from 'litesvm';

export const SYSTEM_PROGRAM = address('11111111111111111111111111111111');
export const TOKEN_PROGRAM = address('TokenkegQfeZyiNwAJbNbGKPFXCWuBvf9Ss623VQ5DA');
export const TOKEN_2022_PROGRAM = address('TokenzQdBNbLqP5VEhdkAS6EPFLC1PHnBqCXEpPxuEb');
export const ASSOCIATED_TOKEN_PROGRAM = address('ATokenGPvbdGVxr1b2hvZbsiqW5xWH25efTNsLJA8knL');
export const BPF_LOADER_UPGRADEABLE = address('BPFLoaderUpgradeab1e11111111111111111111111');
export const METAPLEX_TOKEN_METADATA_PROGRAM = address('metaqbxxUerdq28cj1RbAWkYQm3ybzjb6a8bt518x1s');

/** Real RPC nodes report this for every rent-exempt account. */
export const RENT_EPOCH_EXEMPT = 18446744073709551615n;
/** Solana's target slot time; used to place back-dated transactions at a plausible slot. */
const SLOT_SECONDS = 0.4;
/** LiteSVM charges the mainnet default. */
const LAMPORTS_PER_SIGNATURE = 5000n;

/** One transaction a fixture sent, kept so the facade can answer getSignaturesForAddress/getTransaction. */
export interface RecordedTransaction {
  signature: Signature;
  slot: bigint;
  blockTime: number;
  /** Static account keys of the compiled message, in message order (fee payer first). */
  accountKeys: Address[];
  /** The signed transaction in wire format. */
  wire: ReadonlyUint8Array;
  version: 'legacy' | 0;
  logs: string[];
  computeUnits: bigint;
  fee: bigint;
  preBalances: bigint[];
  postBalances: bigint[];
  /** Insertion order: breaks ties between transactions of one slot. */
  sequence: number;
}

/**
 * Every transaction the fixtures sent, indexed by signature and by account key. LiteSVM keeps a
 * transaction history by signature only, so the address index that getSignaturesForAddress needs lives here.
 */
export class TransactionLedger {
  private readonly bySignature = new Map<string, RecordedTransaction>();
  private readonly byAddress = new Map<string, RecordedTransaction[]>();
  /** Bumped by every transaction and direct write: lets readers cache what they derive from the state. */
  version = 0;

  record(tx: RecordedTransaction): void {
    this.version += 1;
    this.bySignature.set(tx.signature, tx);
    for (const key of new Set(tx.accountKeys)) {
      const list = this.byAddress.get(key) ?? [];
      list.push(tx);
      this.byAddress.set(key, list);
    }
  }

  get(signature: string): RecordedTransaction | undefined {
    return this.bySignature.get(signature);
  }

  /** Newest first, as the real getSignaturesForAddress orders them. */
  forAddress(addr: string): RecordedTransaction[] {
    return [...(this.byAddress.get(addr) ?? [])].sort((a, b) =>
      a.slot === b.slot ? b.sequence - a.sequence : a.slot < b.slot ? 1 : -1,
    );
  }

  /** A state change that was no transaction (setAccount). */
  noteWrite(): void {
    this.version += 1;
  }

  get size(): number {
    return this.bySignature.size;
  }
}

export interface SendOptions {
  /** Defaults to the chain's funded payer. */
  feePayer?: KeyPairSigner;
  /**
   * Back-date the transaction: it gets `blockTime = startTime - ageSeconds` and a slot that many slot-times
   * before the head, so "account younger than 7 days" can be tested without waiting.
   */
  ageSeconds?: number;
}

/**
 * LiteSVM plus the bookkeeping a node would have: a slot that advances per transaction, block times,
 * and the ledger. Fixture helpers send every instruction through `send` so nothing is invisible to the facade.
 */
export class SolanaTestChain {
  readonly ledger = new TransactionLedger();
  /** Wall-clock second the chain "is at"; block times count from here. */
  readonly startTime: number;
  private readonly startSlot: bigint;
  private headSlot: bigint;
  private sequence = 0;
  private readonly signers = new Map<string, Promise<KeyPairSigner>>();

  private constructor(
    readonly svm: LiteSVM,
    readonly payer: KeyPairSigner,
  ) {
    this.startTime = Math.floor(Date.now() / 1000);
    this.startSlot = svm.getClock().slot;
    this.headSlot = this.startSlot;
    this.setClock(this.headSlot, this.startTime);
  }

  static async create(): Promise<SolanaTestChain> {
    const svm = new LiteSVM();
    const payer = await deterministicSigner('chain-payer');
    const funded = svm.airdrop(payer.address, lamports(100_000n * 1_000_000_000n));
    if (!funded || funded instanceof FailedTransactionMetadata) throw new Error('LiteSVM airdrop failed');
    return new SolanaTestChain(svm, payer);
  }

  /** A key pair derived from a name: the same fixture gets the same address on every run. */
  signer(name: string): Promise<KeyPairSigner> {
    let found = this.signers.get(name);
    if (!found) {
      found = deterministicSigner(name);
      this.signers.set(name, found);
    }
    return found;
  }

  get slot(): bigint {
    return this.headSlot;
  }

  /** The epoch LiteSVM's clock reports (Token-2022 schedules transfer-fee changes by it). */
  get epoch(): bigint {
    return this.svm.getClock().epoch;
  }

  /**
   * Let `count` slots pass without a transaction, as a real chain does between two of a user's: e.g. an
   * address lookup table's new addresses are usable only from the slot after the one that added them.
   */
  advanceSlots(count = 1n): void {
    this.headSlot += count;
    this.setClock(this.headSlot, this.timeAt(this.headSlot));
  }

  minimumBalance(space: number): bigint {
    return this.svm.minimumBalanceForRentExemption(BigInt(space));
  }

  /** Sign with the payer and every signer the instructions carry, run it, record it; throws on failure. */
  async send(instructions: Instruction[], opts: SendOptions = {}): Promise<RecordedTransaction> {
    const feePayer = opts.feePayer ?? this.payer;
    const age = opts.ageSeconds ?? 0;
    const slot = age > 0 ? this.slotBefore(age) : this.headSlot + 1n;
    const blockTime = age > 0 ? this.startTime - age : this.timeAt(slot);
    this.setClock(slot, blockTime);

    const tx = await pipe(
      createTransactionMessage({ version: 0 }),
      (m) => setTransactionMessageFeePayerSigner(feePayer, m),
      (m) =>
        setTransactionMessageLifetimeUsingBlockhash(
          { blockhash: this.svm.latestBlockhash(), lastValidBlockHeight: slot + 150n },
          m,
        ),
      (m) => appendTransactionMessageInstructions(instructions, m),
      (m) => signTransactionMessageWithSigners(m),
    );
    const message = getCompiledTransactionMessageDecoder().decode(tx.messageBytes);
    const accountKeys = [...message.staticAccounts];
    const preBalances = accountKeys.map((k) => this.svm.getBalance(k) ?? 0n);

    const result = this.svm.sendTransaction(tx);
    // A fresh blockhash per transaction: two identical instructions must not collide as "already processed".
    this.svm.expireBlockhash();
    if (age === 0) this.headSlot = slot;
    this.setClock(this.headSlot, this.timeAt(this.headSlot));
    if (result instanceof FailedTransactionMetadata) {
      throw new Error(`transaction failed: ${result.toString()}\n${result.meta().logs().join('\n')}`);
    }

    const recorded: RecordedTransaction = {
      signature: getSignatureFromTransaction(tx),
      slot,
      blockTime,
      accountKeys,
      wire: getTransactionEncoder().encode(tx),
      version: message.version === 'legacy' ? 'legacy' : 0,
      logs: result.logs(),
      computeUnits: result.computeUnitsConsumed(),
      fee: LAMPORTS_PER_SIGNATURE * BigInt(Object.keys(tx.signatures).length),
      preBalances,
      postBalances: accountKeys.map((k) => this.svm.getBalance(k) ?? 0n),
      sequence: this.sequence++,
    };
    this.ledger.record(recorded);
    return recorded;
  }

  /**
   * Write an account directly, for state no transaction can produce here (a program that is not on npm,
   * an account at an address nobody holds the key of). Zero lamports deletes the account.
   */
  setAccount(account: Omit<EncodedAccount, 'space'>): void {
    this.svm.setAccount({ ...account, space: BigInt(account.data.length) });
    this.ledger.noteWrite();
  }

  private timeAt(slot: bigint): number {
    return this.startTime + Math.floor(Number(slot - this.startSlot) * SLOT_SECONDS);
  }

  private slotBefore(ageSeconds: number): bigint {
    const back = BigInt(Math.ceil(ageSeconds / SLOT_SECONDS));
    return this.startSlot > back ? this.startSlot - back : 1n;
  }

  private setClock(slot: bigint, unixTimestamp: number): void {
    const clock = this.svm.getClock();
    clock.slot = slot;
    clock.unixTimestamp = BigInt(unixTimestamp);
    clock.epoch = epochOfSlot(this.svm, slot);
    this.svm.setClock(clock);
  }
}

/** EpochSchedule::get_epoch, warm-up included (LiteSVM uses the default schedule). */
export function epochOfSlot(svm: LiteSVM, slot: bigint): bigint {
  const s = svm.getEpochSchedule();
  if (slot < s.firstNormalSlot) {
    // Warm-up epochs double in length from MINIMUM_SLOTS_PER_EPOCH (32).
    let epoch = 0n;
    let len = 32n;
    let start = 0n;
    while (start + len <= slot) {
      start += len;
      len *= 2n;
      epoch += 1n;
    }
    return epoch;
  }
  return s.firstNormalEpoch + (slot - s.firstNormalSlot) / s.slotsPerEpoch;
}

/** First slot of an epoch, for getEpochInfo's slotIndex. */
export function firstSlotOfEpoch(svm: LiteSVM, epoch: bigint): bigint {
  const s = svm.getEpochSchedule();
  if (epoch <= s.firstNormalEpoch) return 32n * (2n ** epoch - 1n);
  return s.firstNormalSlot + (epoch - s.firstNormalEpoch) * s.slotsPerEpoch;
}

async function deterministicSigner(name: string): Promise<KeyPairSigner> {
  const seed = createHash('sha256').update(`riskwatch-fixture:${name}`).digest();
  return createKeyPairSignerFromPrivateKeyBytes(new Uint8Array(seed));
}

export const addressBytes = (a: Address): ReadonlyUint8Array => getAddressEncoder().encode(a);
