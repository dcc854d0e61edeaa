import {
  address as toAddress,
  getAddressDecoder,
  getAddressEncoder,
  getDiscriminatedUnionDecoder,
  getOptionDecoder,
  getProgramDerivedAddress,
  getStructDecoder,
  getU32Decoder,
  getU64Decoder,
  getUnitDecoder,
  unwrapOption,
} from '@solana/kit';
import type { SolanaRpc } from '../../chains/solana.js';
import { settle } from '../../platform/settle.js';
import { finding, type Finding } from '../findings.js';
import { incompleteFinding } from '../incomplete.js';
import type { AnalyzeOptions, ChainAnalysis } from '../types.js';
import { BPF_LOADER_UPGRADEABLE, classifySolanaAccount } from './kind.js';

/*
 * No maintained codec for the loaders' account state is among the dependencies (@solana-program/loader-v3
 * is not installed), so the two tiny fixed layouts are described here with @solana/kit's codec
 * combinators — not byte offsets:
 *
 * loader-v3 `UpgradeableLoaderState` (bincode): a u32 variant tag, then
 *   0 Uninitialized | 1 Buffer { authority: Option<Pubkey> } | 2 Program { programdata: Pubkey }
 *   | 3 ProgramData { slot: u64, upgrade_authority: Option<Pubkey> }   (bincode Option = u8 tag + value)
 * loader-v4 `LoaderV4State`: { slot: u64, authority_address_or_next_version: Pubkey, status: u64 enum
 *   (0 Retracted, 1 Deployed, 2 Finalized) } — finalized programs can no longer be changed.
 */
export const loaderV3StateDecoder = getDiscriminatedUnionDecoder(
  [
    ['Uninitialized', getUnitDecoder()],
    ['Buffer', getStructDecoder([['authority', getOptionDecoder(getAddressDecoder())]])],
    ['Program', getStructDecoder([['programData', getAddressDecoder()]])],
    [
      'ProgramData',
      getStructDecoder([
        ['slot', getU64Decoder()],
        ['upgradeAuthority', getOptionDecoder(getAddressDecoder())],
      ]),
    ],
  ],
  { size: getU32Decoder() },
);
const loaderV4StateDecoder = getStructDecoder([
  ['slot', getU64Decoder()],
  ['authorityOrNextVersion', getAddressDecoder()],
  ['status', getU64Decoder()],
]);
const LOADER_V4_FINALIZED = 2n;
/** ProgramData's metadata before the ELF (tag 4 + slot 8 + Option<Pubkey> 33): all that is read of it. */
export const PROGRAMDATA_METADATA_SIZE = 45;

/** An explicit "nobody can upgrade it", as opposed to `null` (unknown). */
export const NO_AUTHORITY = 'none';

/**
 * Chain facts of a Solana program (risk-v2 `target_type = program`): executable, loader, and who can
 * upgrade it. `program_upgradeable` (medium) when an upgrade authority exists.
 *
 * One round trip: the target account and, in the same batch, the loader-v3 ProgramData address derived
 * from it (its 45-byte header only, via dataSlice). A second only if a Program account points elsewhere.
 */
export async function analyzeSolanaProgram(
  rpc: SolanaRpc,
  address: string,
  opts: AnalyzeOptions,
): Promise<ChainAnalysis> {
  const read = { signal: opts.signal };
  const derived = await programDataAddress(address);
  const slice = { ...read, dataSlice: { offset: 0, length: PROGRAMDATA_METADATA_SIZE } };
  const [targetRead, derivedRead] = await Promise.allSettled([
    rpc.getMultipleAccounts([address], read),
    rpc.getAccountInfo(derived, slice),
  ]);

  const findings: Finding[] = [];
  const facts: Record<string, unknown> = {
    exists: null,
    kind: null,
    owner_program: null,
    executable: null,
    loader: null,
    upgrade_authority: null,
    programdata_address: null,
    last_deploy_slot: null,
  };
  if (targetRead.status === 'rejected') {
    const f = incompleteFinding('getMultipleAccounts', 'the program account', targetRead.reason, undefined);
    return { kind: 'program', findings: [f], facts, complete: false, dataAsOf: {}, listInputs: {} };
  }
  const slot = targetRead.value.slot;
  const incomplete = (method: string, check: string, reason: unknown, value: Record<string, unknown> = {}) =>
    findings.push(incompleteFinding(method, check, reason, slot, value));
  const account = targetRead.value.accounts[0] ?? null;
  const { kind, ownerProgram, loader } = classifySolanaAccount(account);
  Object.assign(facts, {
    exists: account !== null,
    kind,
    owner_program: ownerProgram,
    executable: account?.executable ?? false,
    loader: kind === 'program' ? (loader ?? null) : null,
  });
  const done = (): ChainAnalysis => ({
    kind,
    findings,
    facts,
    complete: !findings.some((f) => f.code === 'check_incomplete'),
    dataAsOf: { slot },
    listInputs: {},
  });

  if (!account) {
    findings.push(
      finding('account_not_found', `No account exists at ${address}: there is no program here.`, {
        method: 'getMultipleAccounts',
        slot,
        value: { address, account: null },
      }),
    );
    return done();
  }
  if (kind !== 'program') return done(); // Not a program: the risk service raises target_type_mismatch.

  const upgradeable = (authority: string, method: string, evidenceSlot: number, value: object) =>
    findings.push(
      finding(
        'program_upgradeable',
        `${authority} can replace this program's code at any time (loader ${loader}).`,
        { method, slot: evidenceSlot, value },
      ),
    );

  switch (loader) {
    case 'bpf-upgradeable': {
      const state = decode(() => loaderV3StateDecoder.decode(account.data));
      if (state?.__kind !== 'Program') {
        incomplete('getMultipleAccounts', 'the upgradeable-loader program state', undefined, {
          reason: 'the program account does not decode as UpgradeableLoaderState::Program',
        });
        return done();
      }
      const programData = state.programData;
      facts.programdata_address = programData;
      let dataRead = derivedRead;
      // The ProgramData address is always the derived one; anything else is read in a second round trip.
      if (programData !== derived) dataRead = await settle(rpc.getAccountInfo(programData, slice));
      if (dataRead.status === 'rejected') {
        incomplete('getAccountInfo', 'the ProgramData account (upgrade authority)', dataRead.reason, {
          programdata_address: programData,
        });
        return done();
      }
      const data = dataRead.value.account;
      if (!data) {
        // A closed program: its ProgramData is gone, and a closed program id cannot be redeployed.
        facts.closed = true;
        facts.upgrade_authority = NO_AUTHORITY;
        return done();
      }
      const header = decode(() => loaderV3StateDecoder.decode(data.data));
      if (header?.__kind !== 'ProgramData' || data.owner !== BPF_LOADER_UPGRADEABLE) {
        incomplete('getAccountInfo', 'the ProgramData account (upgrade authority)', undefined, {
          programdata_address: programData,
          reason: 'the account does not decode as UpgradeableLoaderState::ProgramData',
        });
        return done();
      }
      const authority = unwrapOption(header.upgradeAuthority);
      facts.upgrade_authority = authority ?? NO_AUTHORITY;
      facts.last_deploy_slot = Number(header.slot);
      if (authority) {
        upgradeable(authority, 'getAccountInfo', dataRead.value.slot, {
          programdata_address: programData,
          upgrade_authority: authority,
          last_deploy_slot: Number(header.slot),
        });
      }
      return done();
    }
    case 'loader-v4': {
      const state = decode(() => loaderV4StateDecoder.decode(account.data));
      if (!state) {
        incomplete('getMultipleAccounts', 'the loader-v4 program state', undefined, {
          reason: 'the program account does not decode as LoaderV4State',
        });
        return done();
      }
      const finalized = state.status === LOADER_V4_FINALIZED;
      facts.last_deploy_slot = Number(state.slot);
      // Finalized: the field names the next version, and this program can no longer change.
      facts.upgrade_authority = finalized ? NO_AUTHORITY : state.authorityOrNextVersion;
      if (!finalized) {
        upgradeable(state.authorityOrNextVersion, 'getMultipleAccounts', slot, {
          upgrade_authority: state.authorityOrNextVersion,
          status: Number(state.status),
          last_deploy_slot: Number(state.slot),
        });
      }
      return done();
    }
    case 'bpf-loader-v1':
    case 'bpf-loader-v2':
    case 'native':
      // These loaders have no upgrade instruction (builtins change only with the validator software).
      facts.upgrade_authority = NO_AUTHORITY;
      return done();
    default:
      // Executable under a loader riskwatch does not know: who can upgrade it is unknown (null), not "none".
      return done();
  }
}

/** loader-v3's ProgramData address: the PDA of the program id under the loader. */
export async function programDataAddress(program: string): Promise<string> {
  const [pda] = await getProgramDerivedAddress({
    programAddress: toAddress(BPF_LOADER_UPGRADEABLE),
    seeds: [getAddressEncoder().encode(toAddress(program))],
  });
  return pda;
}

function decode<T>(fn: () => T): T | undefined {
  try {
    return fn();
  } catch {
    return undefined;
  }
}
