import { address, createNoopSigner, getBase58Decoder, type ReadonlyUint8Array } from '@solana/kit';
import { getAssignInstruction } from '@solana-program/system';
import { AuthorityType, getSetAuthorityInstruction } from '@solana-program/token';
import { getAddress, keccak256, maxUint256, toHex } from 'viem';
import { describe, expect, it } from 'vitest';
import { AppError } from '../../src/platform/errors.js';
import { inspectMessage } from '../../src/risk/payload/message.js';
import { parsePayload } from '../../src/risk/payload/request.js';
import {
  innerInstructionsOf,
  instructionEffects,
  parsedEffect,
} from '../../src/risk/payload/solana-instructions.js';
import { inspectTypedData } from '../../src/risk/payload/typed-data.js';
import type { TypedDataInput } from '../../src/risk/payload/types.js';
import { permit2TypedData } from '../support/evm/typed-data.js';

/*
 * The payload decoders on their own (docs/risk.md#before-the-user-signs): which signature kind typed data
 * is and what it grants, what a message is, and the request checks that keep hashing from looping.
 */

const FROM = getAddress('0x592e198350daf710e98045d2817f86278a1d87a7');
const SPENDER = getAddress('0x3c44cdddb6a900fa2b585dd299e03d12fa4293bc');
const TOKEN = getAddress('0xa0b86991c6218b36c1d19d4a2e9eb0ce3606eb48');
const domain = (name: string, verifyingContract: string, chainId = 1) => ({
  name,
  version: '1',
  chainId,
  verifyingContract,
});
const domainType = [
  { name: 'name', type: 'string' },
  { name: 'version', type: 'string' },
  { name: 'chainId', type: 'uint256' },
  { name: 'verifyingContract', type: 'address' },
];

function invalid(fn: () => unknown): AppError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('invalid_request');
    return err as AppError;
  }
  throw new Error('expected a 400');
}

describe('typed data kinds', () => {
  it('DAI permit: allowed true is an unlimited approval, false grants nothing; expiry 0 has no deadline', () => {
    const typed = (allowed: boolean, expiry: string): TypedDataInput => ({
      types: {
        EIP712Domain: domainType,
        Permit: [
          { name: 'holder', type: 'address' },
          { name: 'spender', type: 'address' },
          { name: 'nonce', type: 'uint256' },
          { name: 'expiry', type: 'uint256' },
          { name: 'allowed', type: 'bool' },
        ],
      },
      primaryType: 'Permit',
      domain: domain('Dai Stablecoin', TOKEN),
      message: { holder: FROM, spender: SPENDER, nonce: '0', expiry, allowed },
    });
    const yes = inspectTypedData(typed(true, '0'), FROM);
    expect(yes.signature).toMatchObject({ kind: 'dai_permit', deadline: null, verifyingContract: TOKEN });
    expect(yes.approvals).toEqual([
      expect.objectContaining({ spender: SPENDER, unlimited: true, source: 'signature' }),
    ]);
    expect(inspectTypedData(typed(false, '1900000000'), FROM).approvals).toEqual([]);
    // The holder must be the signer.
    const other = typed(true, '0');
    other.message.holder = SPENDER;
    expect(invalid(() => inspectTypedData(other, FROM)).extra.errors?.[0]?.path).toBe(
      'typed_data.message.holder',
    );
  });

  it('Permit2 PermitBatch: one approval per token, unlimited from 2^159, expires_at from each expiration', () => {
    const typed = permit2TypedData({
      chainId: 8453,
      spender: SPENDER,
      details: [
        { token: TOKEN, amount: 2n ** 159n, expiration: 1_800_000_000 },
        { token: SPENDER, amount: 2n ** 159n - 1n, expiration: 1_700_000_000 },
      ],
      sigDeadline: 1_800_000_000,
    });
    const r = inspectTypedData(typed, FROM);
    expect(r.signature).toMatchObject({ kind: 'permit2_allowance', chainId: 8453 });
    expect(r.approvals.map((a) => [a.asset.address, a.unlimited, a.expiresAt?.getTime()])).toEqual([
      [TOKEN, true, 1_800_000_000_000],
      [SPENDER, false, 1_700_000_000_000],
    ]);
  });

  it('EIP-3009 TransferWithAuthorization: a payment to its recipient that gives without return', () => {
    const r = inspectTypedData(
      {
        types: {
          EIP712Domain: domainType,
          TransferWithAuthorization: [
            { name: 'from', type: 'address' },
            { name: 'to', type: 'address' },
            { name: 'value', type: 'uint256' },
            { name: 'validAfter', type: 'uint256' },
            { name: 'validBefore', type: 'uint256' },
            { name: 'nonce', type: 'bytes32' },
          ],
        },
        primaryType: 'TransferWithAuthorization',
        domain: domain('USD Coin', TOKEN),
        message: {
          from: FROM,
          to: SPENDER,
          value: '1000000',
          validAfter: '0',
          validBefore: '1900000000',
          nonce: keccak256('0x01'),
        },
      },
      FROM,
    );
    expect(r.signature.kind).toBe('transfer_authorization');
    expect(r.givesWithoutReturn).toBe(true);
    expect(r.counterparties).toEqual([expect.objectContaining({ address: SPENDER, role: 'recipient' })]);
  });

  it('Seaport order offering an NFT for nothing back to the offerer: givesWithoutReturn, recipients named', () => {
    const item = [
      { name: 'itemType', type: 'uint8' },
      { name: 'token', type: 'address' },
      { name: 'identifierOrCriteria', type: 'uint256' },
      { name: 'startAmount', type: 'uint256' },
      { name: 'endAmount', type: 'uint256' },
    ];
    const r = inspectTypedData(
      {
        types: {
          EIP712Domain: domainType,
          OrderComponents: [
            { name: 'offerer', type: 'address' },
            { name: 'offer', type: 'OfferItem[]' },
            { name: 'consideration', type: 'ConsiderationItem[]' },
            { name: 'endTime', type: 'uint256' },
          ],
          OfferItem: item,
          ConsiderationItem: [...item, { name: 'recipient', type: 'address' }],
        },
        primaryType: 'OrderComponents',
        domain: domain('Seaport', '0x0000000000000068F116a894984e2DB1123eB395'),
        message: {
          offerer: FROM,
          offer: [
            { itemType: '2', token: TOKEN, identifierOrCriteria: '7', startAmount: '1', endAmount: '1' },
          ],
          consideration: [
            {
              itemType: '0',
              token: '0x0000000000000000000000000000000000000000',
              identifierOrCriteria: '0',
              startAmount: '1',
              endAmount: '1',
              recipient: SPENDER,
            },
          ],
          endTime: '1900000000',
        },
      },
      FROM,
    );
    expect(r.signature.kind).toBe('seaport_order');
    expect(r.givesWithoutReturn).toBe(true);
    expect(r.approvals[0]).toMatchObject({ asset: { type: 'erc721', address: TOKEN, tokenId: 7n } });
    expect(r.counterparties.map((c) => c.role)).toContain('recipient');
  });

  it('an ERC-2612 permit whose value does not fit uint256: 400, not a crash', () => {
    const typed: TypedDataInput = {
      types: {
        EIP712Domain: domainType,
        Permit: [
          { name: 'owner', type: 'address' },
          { name: 'spender', type: 'address' },
          { name: 'value', type: 'uint256' },
          { name: 'nonce', type: 'uint256' },
          { name: 'deadline', type: 'uint256' },
        ],
      },
      primaryType: 'Permit',
      domain: domain('T', TOKEN),
      message: {
        owner: FROM,
        spender: SPENDER,
        value: (maxUint256 + 1n).toString(),
        nonce: '0',
        deadline: '1',
      },
    };
    invalid(() => inspectTypedData(typed, FROM));
  });
});

describe('chain ids', () => {
  it('a domain.chainId past 2^53 is kept exactly for the mismatch check (chain_id shown as null)', () => {
    const typed: TypedDataInput = {
      types: {
        EIP712Domain: [{ name: 'chainId', type: 'uint256' }],
        Mail: [{ name: 'text', type: 'string' }],
      },
      primaryType: 'Mail',
      domain: { chainId: '18446744073709551617' },
      message: { text: 'hi' },
    };
    const r = inspectTypedData(typed, FROM);
    expect(r.declaredChainId).toBe(18446744073709551617n);
    expect(r.signature.chainId).toBeNull();
  });
});

describe('messages', () => {
  it('eth_sign is always blind; personal_sign of a hash is blind, of text it is not', () => {
    expect(inspectMessage('eth_sign', toHex('hello')).findings.map((f) => f.code)).toEqual([
      'blind_signature',
    ]);
    expect(inspectMessage('personal_sign', keccak256('0x00')).findings.map((f) => f.code)).toEqual([
      'blind_signature',
    ]);
    const text = inspectMessage('personal_sign', toHex('Welcome!\n\nNonce: 5'));
    expect([text.findings, text.text]).toEqual([[], 'Welcome!\n\nNonce: 5']);
    // 32 bytes of readable text is text, not a hash.
    expect(inspectMessage('personal_sign', toHex('abcdefghijklmnopqrstuvwxyz012345')).findings).toEqual([]);
  });
});

describe('request checks', () => {
  const typedWith = (types: Record<string, { name: string; type: string }[]>, primaryType = 'A') => ({
    typed_data: { types, primaryType, domain: {}, message: {} },
  });
  it('one payload; a Solana string on EVM and an object on Solana are refused', () => {
    invalid(() =>
      parsePayload({ transaction: 'AQAB', message: { method: 'eth_sign', data: '0x00' } }, 'evm'),
    );
    invalid(() => parsePayload({ transaction: 'AQAB' }, 'evm'));
    invalid(() => parsePayload({ transaction: { to: TOKEN } }, 'solana'));
    invalid(() => parsePayload({ message: { method: 'personal_sign', data: '0x00' } }, 'solana'));
    expect(parsePayload({}, 'evm')).toBeNull();
  });
  it('typed data: a cycle, a missing type and nesting past 16 levels are 400 before any hashing', () => {
    invalid(() =>
      parsePayload(typedWith({ A: [{ name: 'b', type: 'B' }], B: [{ name: 'a', type: 'A[]' }] }), 'evm'),
    );
    invalid(() => parsePayload(typedWith({ A: [{ name: 'b', type: 'Nope' }] }), 'evm'));
    const deep: Record<string, { name: string; type: string }[]> = {};
    for (let i = 0; i < 20; i++) deep[`T${i}`] = [{ name: 'x', type: i === 19 ? 'uint8' : `T${i + 1}` }];
    invalid(() => parsePayload(typedWith(deep, 'T0'), 'evm'));
    // A shared struct reached twice is not a cycle.
    const shared = {
      A: [
        { name: 'x', type: 'S' },
        { name: 'y', type: 'S[]' },
      ],
      S: [{ name: 'v', type: 'uint256' }],
    };
    expect(parsePayload(typedWith(shared), 'evm')).toMatchObject({ kind: 'typed_data' });
  });
  it('messages: personal_sign takes text, eth_sign only hex', () => {
    expect(parsePayload({ message: { method: 'personal_sign', data: 'hi' } }, 'evm')).toEqual({
      kind: 'message',
      method: 'personal_sign',
      data: '0x6869',
    });
    invalid(() => parsePayload({ message: { method: 'eth_sign', data: 'hi' } }, 'evm'));
  });
});

describe('Solana inner instructions, in each form a node renders them', () => {
  const FROM_SOL = address('3E8LW5fTg7wAb34Wj9bJTcfFWYtzZFsVPhhDfEYRAvZi');
  const STRANGER = address('EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v');
  const ACCOUNT = address('Es9vMFrzaCERmJfrF4H2FYD4KCoNkY11McCe8BenwNYB');
  const base58 = (bytes: ReadonlyUint8Array) => getBase58Decoder().decode(bytes);

  it('compiled, partially decoded and parsed CPIs: Assign, SetAuthority and a close to another key all show', () => {
    const assign = getAssignInstruction({ account: createNoopSigner(FROM_SOL), programAddress: STRANGER });
    const handOver = getSetAuthorityInstruction({
      owned: ACCOUNT,
      owner: createNoopSigner(FROM_SOL),
      authorityType: AuthorityType.AccountOwner,
      newAuthority: STRANGER,
    });
    const keys = [FROM_SOL, '11111111111111111111111111111111'];
    const { resolved, parsed } = innerInstructionsOf(
      [
        {
          index: 0,
          instructions: [
            // compiled: program and accounts by index into the transaction's keys
            { programIdIndex: 1, accounts: [0], data: base58(assign.data), stackHeight: 2 },
            // partially decoded: a program the node does not parse, addresses spelled out
            {
              programId: handOver.programAddress,
              accounts: handOver.accounts.map((a) => a.address),
              data: base58(handOver.data),
              stackHeight: 2,
            },
            // parsed: the node decoded it itself
            {
              program: 'spl-token',
              programId: handOver.programAddress,
              parsed: {
                type: 'closeAccount',
                info: { account: ACCOUNT, destination: STRANGER, owner: FROM_SOL },
              },
              stackHeight: 2,
            },
            'not an instruction',
          ],
        },
      ],
      keys,
    );
    const effects = instructionEffects(resolved, FROM_SOL, new Map());
    for (const p of parsed) parsedEffect(p, FROM_SOL, effects);
    expect(effects.authorities).toEqual([
      {
        account: FROM_SOL,
        authorityType: 'program_owner',
        from: '11111111111111111111111111111111',
        to: STRANGER,
      },
      { account: ACCOUNT, authorityType: 'account_owner', from: FROM_SOL, to: STRANGER },
    ]);
    expect(effects.closes).toEqual([{ account: ACCOUNT, destination: STRANGER, owner: FROM_SOL }]);
  });
});
