import { hashMessage, size, type Hex } from 'viem';
import { finding, type Finding } from '../findings.js';
import type { SignatureInfo } from './types.js';

/*
 * `personal_sign` and `eth_sign` messages (docs/risk.md#signatures). Readable text is what a login or a
 * terms prompt looks like. A 32-byte value that is not text is a hash: signing it signs whatever it is
 * the hash of — a transaction, a permit, an order — that the wallet cannot show. `eth_sign` signs raw
 * bytes without the EIP-191 prefix, so it is always blind.
 */

export interface MessageInspection {
  signature: SignatureInfo;
  /** The message as UTF-8 text when it is readable, else null. */
  text: string | null;
  findings: Finding[];
}

const decoder = new TextDecoder('utf-8', { fatal: true });

/** Printable UTF-8 (tabs and line breaks allowed), or null. */
function readable(bytes: Uint8Array): string | null {
  if (bytes.length === 0) return '';
  let text: string;
  try {
    text = decoder.decode(bytes);
  } catch {
    return null;
  }
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f]/.test(text) ? null : text;
}

export function inspectMessage(method: 'personal_sign' | 'eth_sign', data: Hex): MessageInspection {
  const bytes = Buffer.from(data.slice(2), 'hex');
  const text = readable(bytes);
  const signature: SignatureInfo = {
    standard: method,
    kind: 'unknown',
    chainId: null,
    verifyingContract: null,
    deadline: null,
  };
  const value = { method, data: data.length > 202 ? `${data.slice(0, 202)}…` : data, bytes: size(data) };
  if (method === 'eth_sign')
    return {
      signature,
      text,
      findings: [
        finding(
          'blind_signature',
          `eth_sign signs ${size(data)} raw bytes without the "Ethereum Signed Message" prefix: they can be the hash ` +
            'of a transaction or a permit, which the signature then authorises. No legitimate application needs it.',
          { method: 'eth_sign', value },
        ),
      ],
    };
  if (text === null && bytes.length === 32)
    return {
      signature,
      text,
      findings: [
        finding(
          'blind_signature',
          `personal_sign is asked to sign a 32-byte value that is not text (${data}): a hash of something the ` +
            'wallet cannot show. Sign only messages you can read.',
          { method: 'personal_sign', value: { ...value, eip191_hash: hashMessage({ raw: data }) } },
        ),
      ],
    };
  return { signature, text, findings: [] };
}
