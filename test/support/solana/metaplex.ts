import { getMetadataAccountDataSerializer, TokenStandard } from '@metaplex-foundation/mpl-token-metadata';
import { none, publicKey, some } from '@metaplex-foundation/umi';
import { getProgramDerivedAddress, getUtf8Encoder, lamports, type Address } from '@solana/kit';
import { addressBytes, METAPLEX_TOKEN_METADATA_PROGRAM, type SolanaTestChain } from './chain.js';

/** mpl-token-metadata's MAX_METADATA_LEN: the program allocates this much for every Metadata account. */
const MAX_METADATA_LEN = 679;
// The program "puffs" name, symbol and uri with NUL bytes to these lengths when it creates the account.
const MAX_NAME_LENGTH = 32;
const MAX_SYMBOL_LENGTH = 10;
const MAX_URI_LENGTH = 200;

export interface MetaplexMetadataSpec {
  mint: Address;
  name: string;
  symbol: string;
  uri: string;
  updateAuthority: Address;
  isMutable: boolean;
}

/** The Metadata PDA: seeds ["metadata", program id, mint] under the Token Metadata program. */
export async function metaplexMetadataAddress(mint: Address): Promise<Address> {
  const [pda] = await getProgramDerivedAddress({
    programAddress: METAPLEX_TOKEN_METADATA_PROGRAM,
    seeds: [
      getUtf8Encoder().encode('metadata'),
      addressBytes(METAPLEX_TOKEN_METADATA_PROGRAM),
      addressBytes(mint),
    ],
  });
  return pda;
}

/**
 * Write a Metaplex Metadata account as CreateMetadataAccountV3 would leave it for a fungible mint.
 * The Token Metadata program is not on npm, so the account is written directly (setAccount) with bytes from
 * the official mpl-token-metadata serializer. Strings keep the program's NUL padding: a reader must trim it.
 */
export async function writeMetaplexMetadata(
  chain: SolanaTestChain,
  spec: MetaplexMetadataSpec,
): Promise<Address> {
  const metadataAddress = await metaplexMetadataAddress(spec.mint);
  const [, editionBump] = await getProgramDerivedAddress({
    programAddress: METAPLEX_TOKEN_METADATA_PROGRAM,
    seeds: [
      getUtf8Encoder().encode('metadata'),
      addressBytes(METAPLEX_TOKEN_METADATA_PROGRAM),
      addressBytes(spec.mint),
      getUtf8Encoder().encode('edition'),
    ],
  });
  const serialized = getMetadataAccountDataSerializer().serialize({
    updateAuthority: publicKey(spec.updateAuthority),
    mint: publicKey(spec.mint),
    name: puff(spec.name, MAX_NAME_LENGTH),
    symbol: puff(spec.symbol, MAX_SYMBOL_LENGTH),
    uri: puff(spec.uri, MAX_URI_LENGTH),
    sellerFeeBasisPoints: 0,
    creators: none(),
    primarySaleHappened: false,
    isMutable: spec.isMutable,
    editionNonce: some(editionBump),
    tokenStandard: some(TokenStandard.Fungible),
    collection: none(),
    uses: none(),
    collectionDetails: none(),
    programmableConfig: none(),
  });
  const data = new Uint8Array(MAX_METADATA_LEN);
  data.set(serialized);
  chain.setAccount({
    address: metadataAddress,
    data,
    executable: false,
    lamports: lamports(chain.minimumBalance(MAX_METADATA_LEN)),
    programAddress: METAPLEX_TOKEN_METADATA_PROGRAM,
  });
  return metadataAddress;
}

function puff(value: string, length: number): string {
  const bytes = getUtf8Encoder().encode(value).length;
  if (bytes > length) throw new Error(`"${value}" is longer than ${length} bytes`);
  return value + '\0'.repeat(length - bytes);
}
