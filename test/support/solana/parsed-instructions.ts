import { getAddressDecoder, getBase58Decoder, type Address, type ReadonlyUint8Array } from '@solana/kit';
import { ASSOCIATED_TOKEN_PROGRAM, SYSTEM_PROGRAM, TOKEN_2022_PROGRAM, TOKEN_PROGRAM } from './chain.js';

/*
 * Inner instructions the way a node renders them in simulateTransaction (`innerInstructions: true`): Agave's
 * `parse_ui_inner_instructions`, i.e. jsonParsed where the node has a parser, otherwise "partially decoded"
 * (program id and account addresses, base58 data). Parsed here, with Agave's type and field names: the
 * System program, the instruction set SPL Token and Token-2022 share (not Token-2022's extension
 * instructions) and the Associated Token Account program's create / createIdempotent. Anything else is
 * partially decoded, as a node does for a program it cannot parse.
 */

export interface CompiledInnerInstruction {
  programIdIndex: number;
  accounts: readonly number[];
  data: ReadonlyUint8Array;
}

export interface UiParsedInstruction {
  program: string;
  programId: Address;
  parsed: { info: Record<string, unknown>; type: string };
  stackHeight: number | null;
}

export interface UiPartiallyDecodedInstruction {
  programId: Address;
  accounts: Address[];
  data: string;
  stackHeight: number | null;
}

export type UiInstruction = UiParsedInstruction | UiPartiallyDecodedInstruction;

export function uiInstruction(
  ix: CompiledInnerInstruction,
  accountKeys: readonly Address[],
  stackHeight: number | null,
): UiInstruction {
  const programId = accountKeys[ix.programIdIndex];
  if (!programId) throw new Error(`program id index ${ix.programIdIndex} is out of the account keys`);
  const parser = PARSERS[programId];
  if (parser && ix.accounts.every((i) => i < accountKeys.length)) {
    const accounts = ix.accounts.map((i) => accountKeys[i] as Address);
    try {
      const parsed = parser.parse(new Reader(ix.data), accounts);
      if (parsed) return { program: parser.name, programId, parsed, stackHeight };
    } catch (err) {
      if (!(err instanceof NotParsable)) throw err;
    }
  }
  return {
    programId,
    accounts: ix.accounts.map((i) => {
      const key = accountKeys[i];
      if (!key) throw new Error(`account index ${i} is out of the account keys`);
      return key;
    }),
    data: getBase58Decoder().decode(ix.data),
    stackHeight,
  };
}

type Parsed = { info: Record<string, unknown>; type: string };
interface Parser {
  name: string;
  /** undefined (or a NotParsable throw): the node falls back to the partially decoded form. */
  parse(data: Reader, accounts: Address[]): Parsed | undefined;
}

class NotParsable extends Error {}

/** Little-endian reader over instruction data; running out of bytes means "not parsable". */
class Reader {
  private pos = 0;
  constructor(private readonly bytes: ReadonlyUint8Array) {}

  get remaining(): number {
    return this.bytes.length - this.pos;
  }

  private take(n: number): ReadonlyUint8Array {
    if (this.pos + n > this.bytes.length) throw new NotParsable();
    const out = this.bytes.slice(this.pos, this.pos + n);
    this.pos += n;
    return out;
  }

  u8(): number {
    return this.take(1)[0] as number;
  }

  u16(): number {
    const b = this.take(2);
    return (b[0] as number) | ((b[1] as number) << 8);
  }

  u32(): number {
    const b = this.take(4);
    return Buffer.from(b).readUInt32LE(0);
  }

  u64(): bigint {
    return Buffer.from(this.take(8)).readBigUInt64LE(0);
  }

  address(): Address {
    return getAddressDecoder().decode(this.take(32));
  }

  /** bincode String: u64 length, UTF-8 bytes. */
  string(): string {
    const len = this.u64();
    if (len > BigInt(this.remaining)) throw new NotParsable();
    return Buffer.from(this.take(Number(len))).toString('utf8');
  }

  /** SPL's COption<Pubkey> in instruction data: a u8 tag (0 none, 1 some) then the key when some. */
  optionalAddress(): Address | null {
    const tag = this.u8();
    if (tag === 0) return null;
    if (tag === 1) return this.address();
    throw new NotParsable();
  }

  rest(): ReadonlyUint8Array {
    return this.take(this.remaining);
  }
}

function need(accounts: Address[], n: number): void {
  if (accounts.length < n) throw new NotParsable();
}

const at = (accounts: Address[], i: number): Address => {
  const key = accounts[i];
  if (!key) throw new NotParsable();
  return key;
};

const SYSTEM: Parser = {
  name: 'system',
  parse(d, a) {
    switch (d.u32()) {
      case 0: {
        need(a, 2);
        const lamports = d.u64();
        const space = d.u64();
        const owner = d.address();
        return {
          type: 'createAccount',
          info: { source: at(a, 0), newAccount: at(a, 1), lamports, space, owner },
        };
      }
      case 1:
        need(a, 1);
        return { type: 'assign', info: { account: at(a, 0), owner: d.address() } };
      case 2:
        need(a, 2);
        return { type: 'transfer', info: { source: at(a, 0), destination: at(a, 1), lamports: d.u64() } };
      case 3: {
        need(a, 2);
        const base = d.address();
        const seed = d.string();
        const lamports = d.u64();
        const space = d.u64();
        const owner = d.address();
        return {
          type: 'createAccountWithSeed',
          info: { source: at(a, 0), newAccount: at(a, 1), base, seed, lamports, space, owner },
        };
      }
      case 4:
        need(a, 3);
        return {
          type: 'advanceNonce',
          info: { nonceAccount: at(a, 0), recentBlockhashesSysvar: at(a, 1), nonceAuthority: at(a, 2) },
        };
      case 5:
        need(a, 5);
        return {
          type: 'withdrawFromNonce',
          info: {
            nonceAccount: at(a, 0),
            destination: at(a, 1),
            recentBlockhashesSysvar: at(a, 2),
            rentSysvar: at(a, 3),
            nonceAuthority: at(a, 4),
            lamports: d.u64(),
          },
        };
      case 6:
        need(a, 3);
        return {
          type: 'initializeNonce',
          info: {
            nonceAccount: at(a, 0),
            recentBlockhashesSysvar: at(a, 1),
            rentSysvar: at(a, 2),
            nonceAuthority: d.address(),
          },
        };
      case 7:
        need(a, 2);
        return {
          type: 'authorizeNonce',
          info: { nonceAccount: at(a, 0), nonceAuthority: at(a, 1), newAuthorized: d.address() },
        };
      case 8:
        need(a, 1);
        return { type: 'allocate', info: { account: at(a, 0), space: d.u64() } };
      case 9: {
        need(a, 2);
        const base = d.address();
        const seed = d.string();
        const space = d.u64();
        const owner = d.address();
        return { type: 'allocateWithSeed', info: { account: at(a, 0), base, seed, space, owner } };
      }
      case 10: {
        need(a, 2);
        const base = d.address();
        const seed = d.string();
        const owner = d.address();
        return { type: 'assignWithSeed', info: { account: at(a, 0), base, seed, owner } };
      }
      case 11: {
        need(a, 3);
        const lamports = d.u64();
        const sourceSeed = d.string();
        const sourceOwner = d.address();
        return {
          type: 'transferWithSeed',
          info: {
            source: at(a, 0),
            sourceBase: at(a, 1),
            destination: at(a, 2),
            lamports,
            sourceSeed,
            sourceOwner,
          },
        };
      }
      case 12:
        need(a, 1);
        return { type: 'upgradeNonce', info: { nonceAccount: at(a, 0) } };
      default:
        return undefined;
    }
  },
};

/** spl-token-2022's AuthorityType, in Agave's camelCase. */
const AUTHORITY_TYPES = [
  'mintTokens',
  'freezeAccount',
  'accountOwner',
  'closeAccount',
  'transferFeeConfig',
  'withheldWithdraw',
  'closeMint',
  'interestRate',
  'permanentDelegate',
  'confidentialTransferMint',
  'transferHookProgramId',
  'confidentialTransferFeeConfig',
  'metadataPointer',
  'groupPointer',
  'groupMemberPointer',
  'scaledUiAmount',
  'pause',
  'permissionedBurn',
];

/** spl-token-2022's ExtensionType (u16 values), in Agave's camelCase. */
const EXTENSION_TYPES = [
  'uninitialized',
  'transferFeeConfig',
  'transferFeeAmount',
  'mintCloseAuthority',
  'confidentialTransferMint',
  'confidentialTransferAccount',
  'defaultAccountState',
  'immutableOwner',
  'memoTransfer',
  'nonTransferable',
  'interestBearingConfig',
  'cpiGuard',
  'permanentDelegate',
  'nonTransferableAccount',
  'transferHook',
  'transferHookAccount',
  'confidentialTransferFeeConfig',
  'confidentialTransferFeeAmount',
  'metadataPointer',
  'tokenMetadata',
  'groupPointer',
  'tokenGroup',
  'groupMemberPointer',
  'tokenGroupMember',
  'confidentialMintBurn',
  'scaledUiAmount',
  'pausable',
  'pausableAccount',
];

/** Agave's `parse_signers`: a single authority, or a multisig and its signers. */
function signers(
  info: Record<string, unknown>,
  lastNonSigner: number,
  a: Address[],
  ownerField: string,
  multisigField: string,
): Record<string, unknown> {
  const owner = a[lastNonSigner];
  if (a.length > lastNonSigner + 1) {
    if (owner) info[multisigField] = owner;
    info.signers = a.slice(lastNonSigner + 1);
  } else if (owner) {
    info[ownerField] = owner;
  }
  return info;
}

/** Agave's UiTokenAmount for an amount and decimals (no interest-bearing / scaled mint lookup). */
function tokenAmount(amount: bigint, decimals: number) {
  const digits = amount.toString().padStart(decimals + 1, '0');
  const whole = decimals === 0 ? digits : digits.slice(0, -decimals);
  const fraction = decimals === 0 ? '' : digits.slice(-decimals).replace(/0+$/, '');
  return {
    uiAmount: Number(amount) / 10 ** decimals,
    decimals,
    amount: amount.toString(),
    uiAmountString: fraction ? `${whole}.${fraction}` : whole,
  };
}

const TOKEN: Parser = {
  name: 'spl-token',
  parse(d, a) {
    const tag = d.u8();
    switch (tag) {
      case 0:
      case 20: {
        need(a, tag === 0 ? 2 : 1);
        const decimals = d.u8();
        const mintAuthority = d.address();
        const freezeAuthority = d.optionalAddress();
        const info: Record<string, unknown> = { mint: at(a, 0), decimals, mintAuthority };
        if (tag === 0) info.rentSysvar = at(a, 1);
        if (freezeAuthority) info.freezeAuthority = freezeAuthority;
        return { type: tag === 0 ? 'initializeMint' : 'initializeMint2', info };
      }
      case 1:
        need(a, 4);
        return {
          type: 'initializeAccount',
          info: { account: at(a, 0), mint: at(a, 1), owner: at(a, 2), rentSysvar: at(a, 3) },
        };
      case 16:
        need(a, 3);
        return {
          type: 'initializeAccount2',
          info: { account: at(a, 0), mint: at(a, 1), owner: d.address(), rentSysvar: at(a, 2) },
        };
      case 18:
        need(a, 2);
        return {
          type: 'initializeAccount3',
          info: { account: at(a, 0), mint: at(a, 1), owner: d.address() },
        };
      case 2:
        need(a, 3);
        return {
          type: 'initializeMultisig',
          info: { multisig: at(a, 0), rentSysvar: at(a, 1), signers: a.slice(2), m: d.u8() },
        };
      case 19:
        need(a, 2);
        return { type: 'initializeMultisig2', info: { multisig: at(a, 0), signers: a.slice(1), m: d.u8() } };
      case 3:
        need(a, 3);
        return {
          type: 'transfer',
          info: signers(
            { source: at(a, 0), destination: at(a, 1), amount: d.u64().toString() },
            2,
            a,
            'authority',
            'multisigAuthority',
          ),
        };
      case 4:
        need(a, 3);
        return {
          type: 'approve',
          info: signers(
            { source: at(a, 0), delegate: at(a, 1), amount: d.u64().toString() },
            2,
            a,
            'owner',
            'multisigOwner',
          ),
        };
      case 5:
        need(a, 2);
        return { type: 'revoke', info: signers({ source: at(a, 0) }, 1, a, 'owner', 'multisigOwner') };
      case 6: {
        need(a, 2);
        const kind = d.u8();
        const authorityType = AUTHORITY_TYPES[kind];
        if (!authorityType) return undefined;
        const newAuthority = d.optionalAddress();
        const owned =
          authorityType === 'accountOwner' || authorityType === 'closeAccount' ? 'account' : 'mint';
        return {
          type: 'setAuthority',
          info: signers(
            { [owned]: at(a, 0), authorityType, newAuthority },
            1,
            a,
            'authority',
            'multisigAuthority',
          ),
        };
      }
      case 7:
        need(a, 3);
        return {
          type: 'mintTo',
          info: signers(
            { mint: at(a, 0), account: at(a, 1), amount: d.u64().toString() },
            2,
            a,
            'mintAuthority',
            'multisigMintAuthority',
          ),
        };
      case 8:
        need(a, 3);
        return {
          type: 'burn',
          info: signers(
            { account: at(a, 0), mint: at(a, 1), amount: d.u64().toString() },
            2,
            a,
            'authority',
            'multisigAuthority',
          ),
        };
      case 9:
        need(a, 3);
        return {
          type: 'closeAccount',
          info: signers({ account: at(a, 0), destination: at(a, 1) }, 2, a, 'owner', 'multisigOwner'),
        };
      case 10:
      case 11:
        need(a, 3);
        return {
          type: tag === 10 ? 'freezeAccount' : 'thawAccount',
          info: signers(
            { account: at(a, 0), mint: at(a, 1) },
            2,
            a,
            'freezeAuthority',
            'multisigFreezeAuthority',
          ),
        };
      case 12:
      case 13: {
        need(a, 4);
        const amount = d.u64();
        const decimals = d.u8();
        const third = tag === 12 ? 'destination' : 'delegate';
        return {
          type: tag === 12 ? 'transferChecked' : 'approveChecked',
          info: signers(
            {
              source: at(a, 0),
              mint: at(a, 1),
              [third]: at(a, 2),
              tokenAmount: tokenAmount(amount, decimals),
            },
            3,
            a,
            tag === 12 ? 'authority' : 'owner',
            tag === 12 ? 'multisigAuthority' : 'multisigOwner',
          ),
        };
      }
      case 14: {
        need(a, 3);
        const amount = d.u64();
        const decimals = d.u8();
        return {
          type: 'mintToChecked',
          info: signers(
            { mint: at(a, 0), account: at(a, 1), tokenAmount: tokenAmount(amount, decimals) },
            2,
            a,
            'mintAuthority',
            'multisigMintAuthority',
          ),
        };
      }
      case 15: {
        need(a, 3);
        const amount = d.u64();
        const decimals = d.u8();
        return {
          type: 'burnChecked',
          info: signers(
            { account: at(a, 0), mint: at(a, 1), tokenAmount: tokenAmount(amount, decimals) },
            2,
            a,
            'authority',
            'multisigAuthority',
          ),
        };
      }
      case 17:
        need(a, 1);
        return { type: 'syncNative', info: { account: at(a, 0) } };
      case 21: {
        need(a, 1);
        const info: Record<string, unknown> = { mint: at(a, 0) };
        const extensionTypes: string[] = [];
        while (d.remaining >= 2) {
          const name = EXTENSION_TYPES[d.u16()];
          if (!name) return undefined;
          extensionTypes.push(name);
        }
        if (d.remaining !== 0) return undefined;
        if (extensionTypes.length > 0) info.extensionTypes = extensionTypes;
        return { type: 'getAccountDataSize', info };
      }
      case 22:
        need(a, 1);
        return { type: 'initializeImmutableOwner', info: { account: at(a, 0) } };
      case 23:
        need(a, 1);
        return { type: 'amountToUiAmount', info: { mint: at(a, 0), amount: d.u64().toString() } };
      case 24:
        need(a, 1);
        return {
          type: 'uiAmountToAmount',
          info: { mint: at(a, 0), uiAmount: Buffer.from(d.rest()).toString('utf8') },
        };
      case 38:
        need(a, 3);
        return {
          type: 'withdrawExcessLamports',
          info: signers({ source: at(a, 0), destination: at(a, 1) }, 2, a, 'authority', 'multisigAuthority'),
        };
      default:
        // Token-2022 extension instructions: partially decoded here (a node parses most of them).
        return undefined;
    }
  },
};

const ASSOCIATED_TOKEN: Parser = {
  name: 'spl-associated-token-account',
  parse(d, a) {
    const tag = d.remaining === 0 ? 0 : d.u8();
    if (tag !== 0 && tag !== 1) return undefined;
    need(a, 6);
    return {
      type: tag === 0 ? 'create' : 'createIdempotent',
      info: {
        source: at(a, 0),
        account: at(a, 1),
        wallet: at(a, 2),
        mint: at(a, 3),
        systemProgram: at(a, 4),
        tokenProgram: at(a, 5),
      },
    };
  },
};

const PARSERS: Record<string, Parser> = {
  [SYSTEM_PROGRAM]: SYSTEM,
  [TOKEN_PROGRAM]: TOKEN,
  [TOKEN_2022_PROGRAM]: TOKEN,
  [ASSOCIATED_TOKEN_PROGRAM]: ASSOCIATED_TOKEN,
};
