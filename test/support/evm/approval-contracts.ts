import { createHash } from 'node:crypto';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { parseAbi, type Hex } from 'viem';
import { SOLC_EVM_VERSION, solcCacheDir } from './solidity.js';

/**
 * Contracts only the approvals tests and bench need, placed with anvil_setCode (runtime code, no constructor): Permit2's
 * AllowanceTransfer storage and events (there is no Permit2 artifact in node_modules), an ERC-1155's
 * operator approvals, and an ERC-20 event sprayer for the 10,000-log case.
 */
const SOURCE = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;

/// TEST ONLY: Permit2's allowance storage and events, at its address; permit() without the signature.
contract MockPermit2 {
    struct PackedAllowance { uint160 amount; uint48 expiration; uint48 nonce; }
    mapping(address => mapping(address => mapping(address => PackedAllowance))) public allowance;
    event Approval(address indexed owner, address indexed token, address indexed spender, uint160 amount, uint48 expiration);
    event Permit(address indexed owner, address indexed token, address indexed spender, uint160 amount, uint48 expiration, uint48 nonce);
    event Lockdown(address indexed owner, address token, address spender);

    function approve(address token, address spender, uint160 amount, uint48 expiration) external {
        PackedAllowance storage a = allowance[msg.sender][token][spender];
        a.amount = amount;
        a.expiration = expiration == 0 ? uint48(block.timestamp) : expiration;
        emit Approval(msg.sender, token, spender, amount, expiration);
    }

    function permitUnchecked(address owner, address token, address spender, uint160 amount, uint48 expiration) external {
        PackedAllowance storage a = allowance[owner][token][spender];
        uint48 nonce = a.nonce;
        a.amount = amount;
        a.expiration = expiration == 0 ? uint48(block.timestamp) : expiration;
        a.nonce = nonce + 1;
        emit Permit(owner, token, spender, amount, expiration, nonce);
    }

    function lockdown(address token, address spender) external {
        allowance[msg.sender][token][spender].amount = 0;
        emit Lockdown(msg.sender, token, spender);
    }
}

/// TEST ONLY: the operator approvals of an ERC-1155 (ERC-165 says it is one), nothing else.
contract MultiToken {
    mapping(address => mapping(address => bool)) public isApprovedForAll;
    event ApprovalForAll(address indexed account, address indexed operator, bool approved);

    function setApprovalForAll(address operator, bool approved) external {
        isApprovedForAll[msg.sender][operator] = approved;
        emit ApprovalForAll(msg.sender, operator, approved);
    }

    function supportsInterface(bytes4 id) external pure returns (bool) {
        return id == 0xd9b67a26 || id == 0x01ffc9a7;
    }
}

/// TEST ONLY: n ERC-20 Approval events of owner over \`spenders\` spenders; every allowance reads 1.
contract ApprovalSpray {
    event Approval(address indexed owner, address indexed spender, uint256 value);

    function spray(address owner, uint160 firstSpender, uint160 spenders, uint256 n) external {
        for (uint256 i; i < n; ++i) emit Approval(owner, address(firstSpender + uint160(i) % spenders), i + 1);
    }

    function allowance(address, address) external pure returns (uint256) { return 1; }
    function balanceOf(address) external pure returns (uint256) { return 0; }
    function decimals() external pure returns (uint8) { return 18; }
    function symbol() external pure returns (string memory) { return "SPRAY"; }
}
`;

export const permit2Abi = parseAbi([
  'function approve(address token, address spender, uint160 amount, uint48 expiration)',
  'function permitUnchecked(address owner, address token, address spender, uint160 amount, uint48 expiration)',
  'function lockdown(address token, address spender)',
]);
export const multiTokenAbi = parseAbi(['function setApprovalForAll(address operator, bool approved)']);
export const sprayAbi = parseAbi([
  'function spray(address owner, uint160 firstSpender, uint160 spenders, uint256 n)',
]);

/** Runtime code of SOURCE's contracts, compiled once and cached beside the other test contracts. */
export function compileApprovalContracts(): Record<string, Hex> {
  const require = createRequire(import.meta.url);
  const solc = require('solc') as { version(): string; compile(input: string): string };
  const key = createHash('sha256').update(`${solc.version()}|${SOLC_EVM_VERSION}|${SOURCE}`).digest('hex');
  const file = join(solcCacheDir(), `approvals-test-${key}.json`);
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as Record<string, Hex>;
  } catch {
    // not cached yet: compile
  }
  const input = {
    language: 'Solidity',
    sources: { 'Approvals.sol': { content: SOURCE } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      evmVersion: SOLC_EVM_VERSION,
      outputSelection: { '*': { '*': ['evm.deployedBytecode.object'] } },
    },
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { evm: { deployedBytecode: { object: string } } }>>;
  };
  const errors = (output.errors ?? []).filter((e) => e.severity === 'error');
  if (errors.length > 0) throw new Error(errors.map((e) => e.formattedMessage).join('\n'));
  const code: Record<string, Hex> = {};
  for (const [name, c] of Object.entries(output.contracts['Approvals.sol']!))
    code[name] = `0x${c.evm.deployedBytecode.object}`;
  mkdirSync(solcCacheDir(), { recursive: true });
  writeFileSync(`${file}.${process.pid}.tmp`, JSON.stringify(code));
  renameSync(`${file}.${process.pid}.tmp`, file);
  return code;
}
