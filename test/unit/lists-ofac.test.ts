import { createReadStream, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { displayAddress, normaliseAddress } from '../../src/lists/addresses.js';
import {
  parseIsoDay,
  parseOfacSdnAdvancedXml,
  parseSanctionsCsv,
  type SanctionRecord,
} from '../../src/lists/sanctions-files.js';
import { AppError } from '../../src/platform/errors.js';
import { PROJECT_ROOT } from '../../src/platform/paths.js';

const FIXTURES = join(PROJECT_ROOT, 'test', 'fixtures');
const SDN = join(FIXTURES, 'sdn_advanced.xml');
const SDN_DELISTED = join(FIXTURES, 'sdn_advanced_delisted.xml');
const sdnText = readFileSync(SDN, 'utf8');

/** The text in pieces of `size` characters: what a stream hands the parser. */
function* chunks(text: string, size = text.length): Generator<string> {
  for (let i = 0; i < text.length; i += size) yield text.slice(i, i + size);
}

const fromFile = (path: string) => createReadStream(path, { encoding: 'utf8', highWaterMark: 64 });

const NORTHWIND = 'NORTHWIND CYBER COLLECTIVE';
const MORROW = 'MORROW Elias';
const BLUE_HARBOR = 'BLUE HARBOR EXCHANGE LLC';
const GREY_LANTERN = 'GREY LANTERN MIXING SERVICE';

/** Every address test/fixtures/sdn_advanced.xml lists, as the parser must return it. */
const EXPECTED: SanctionRecord[] = [
  { currency: 'ETH', address: '0xdc6d495c24d5b5597b5eba73948b85040fee9521', name: NORTHWIND, uid: '91001' },
  { currency: 'USDT', address: '0xdc6d495c24d5b5597b5eba73948b85040fee9521', name: NORTHWIND, uid: '91001' },
  { currency: 'XBT', address: 'bc1qx9twmuc6dpujm3cdsjy74emgwfx8fzmfwuzg2v', name: NORTHWIND, uid: '91001' },
  { currency: 'SOL', address: '5k8iuEj3HfV27qePWPj1XmtWEcc2FgcE9VuoX32vsZms', name: MORROW, uid: '91002' },
  { currency: 'TRX', address: 'TWWpP9GNAS8U7De3KNdWS3NnUXeZL31NGs', name: MORROW, uid: '91002' },
  { currency: 'ETH', address: '0x69c32b520f5ab1f88fc78e09859a5a949775ec4e', name: MORROW, uid: '91002' },
  { currency: 'USDT', address: 'TC8A5Eb5TatreUEcr5QThJibtceR9dn2PV', name: BLUE_HARBOR, uid: '91003' },
  { currency: 'XBT', address: 'bc1qsxxrmlmetn4jh882f4s0gvt548r8zq4vz5f2fs', name: BLUE_HARBOR, uid: '91003' },
  { currency: 'ETH', address: '0xacba122cb40f7260f95e6722c3fc240ae68317d2', name: BLUE_HARBOR, uid: '91003' },
  {
    currency: 'XMR',
    address:
      '46qGTpLVZHxRsBhFgMkRd4Kj8ePuPyZD8EaTMvYs3vWc5Mv7tTNwG9YkQzLJpQ2cRdHmW6aE8bXsU1nKfJgLtVqA3sRwYpZ',
    name: GREY_LANTERN,
    uid: '91005',
  },
];

async function expectBadFile(promise: Promise<unknown>, message: RegExp): Promise<void> {
  const err: unknown = await promise.then(
    () => new Error('expected the file to be refused'),
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(AppError);
  expect((err as AppError).code).toBe('invalid_request');
  expect((err as AppError).message).toMatch(message);
}

describe('OFAC SDN advanced XML', () => {
  it('reads every digital currency address of the fixture, with currency, party and as-of date', async () => {
    const parsed = await parseOfacSdnAdvancedXml(fromFile(SDN));
    expect(parsed.asOf).toBe('2026-11-20');
    expect(parsed.records).toEqual(EXPECTED);
  });

  it('lower-cases a mixed-case (EIP-55) EVM address and keeps base58 / bech32 addresses as listed', async () => {
    expect(sdnText).toContain('0xDC6d495C24d5B5597B5EBa73948B85040fEe9521');
    const { records } = await parseOfacSdnAdvancedXml(chunks(sdnText));
    const addresses = records.map((r) => r.address);
    expect(addresses).toContain('0xdc6d495c24d5b5597b5eba73948b85040fee9521');
    expect(addresses).not.toContain('0xDC6d495C24d5B5597B5EBa73948B85040fEe9521');
    expect(addresses).toContain('5k8iuEj3HfV27qePWPj1XmtWEcc2FgcE9VuoX32vsZms');
    expect(addresses).toContain('TWWpP9GNAS8U7De3KNdWS3NnUXeZL31NGs');
  });

  it('ignores every other feature: websites, vessel call signs, birthdates, locations, unknown types', async () => {
    const { records } = await parseOfacSdnAdvancedXml(chunks(sdnText));
    const values = records.map((r) => r.address);
    for (const other of ['northwind-collective.example', '9HA1234', 'undefined-feature-type-value'])
      expect(values).not.toContain(other);
    expect(records.some((r) => r.name === 'OCEAN STAR')).toBe(false);
    expect(new Set(records.map((r) => r.currency))).toEqual(
      new Set(['ETH', 'USDT', 'XBT', 'SOL', 'TRX', 'XMR']),
    );
  });

  it('names the party by its primary alias, first documented name (not the a.k.a., not other scripts)', async () => {
    const { records } = await parseOfacSdnAdvancedXml(chunks(sdnText));
    expect(records.filter((r) => r.uid === '91001').map((r) => r.name)).toEqual([
      NORTHWIND,
      NORTHWIND,
      NORTHWIND,
    ]);
    expect(records.find((r) => r.uid === '91002')?.name).toBe(MORROW);
  });

  it.each([1, 7, 13, 4096])(
    'gives the same result however the stream is cut (%i-character chunks)',
    async (size) => {
      const parsed = await parseOfacSdnAdvancedXml(chunks(sdnText, size));
      expect(parsed).toEqual({ asOf: '2026-11-20', records: EXPECTED });
    },
  );

  it('reads the next issue without the de-listed party', async () => {
    const parsed = await parseOfacSdnAdvancedXml(fromFile(SDN_DELISTED));
    expect(parsed.asOf).toBe('2026-11-21');
    expect(parsed.records).toEqual(EXPECTED.filter((r) => r.uid !== '91003'));
  });

  it('matches elements by local name: a namespace prefix and a <Date> inside DateOfIssue are fine', async () => {
    const prefixed = sdnText
      .replace(/<(\/?)(?=[A-Z])/g, '<$1ofac:')
      .replace('<ofac:Sanctions xmlns:xsi', '<ofac:Sanctions xmlns:ofac="urn:example:ofac" xmlns:xsi')
      .replace(
        /<ofac:DateOfIssue>[\s\S]*?<\/ofac:DateOfIssue>/,
        '<ofac:DateOfIssue><ofac:Date CalendarTypeID="1"><ofac:Year>2025</ofac:Year><ofac:Month>2</ofac:Month><ofac:Day>3</ofac:Day></ofac:Date></ofac:DateOfIssue>',
      );
    expect(prefixed).toContain('<ofac:VersionDetail');
    const parsed = await parseOfacSdnAdvancedXml(chunks(prefixed, 100));
    expect(parsed).toEqual({ asOf: '2025-02-03', records: EXPECTED });
  });

  it('does not depend on the order of the sections (feature types defined after the parties)', async () => {
    const refs = / {2}<ReferenceValueSets>[\s\S]*?<\/ReferenceValueSets>\n/.exec(sdnText)![0];
    const moved = sdnText.replace(refs, '').replace('</Sanctions>', `${refs}</Sanctions>`);
    expect((await parseOfacSdnAdvancedXml(chunks(moved))).records).toEqual(EXPECTED);
  });

  it('takes the date only from DateOfIssue (not entry events); without one, asOf is null', async () => {
    const undated = sdnText.replace(/<DateOfIssue>[\s\S]*?<\/DateOfIssue>/, '');
    expect(undated).toContain('<Year>2019</Year>');
    const parsed = await parseOfacSdnAdvancedXml(chunks(undated));
    expect(parsed.asOf).toBeNull();
    expect(parsed.records).toHaveLength(EXPECTED.length);
  });

  it('decodes entities and CDATA in values', async () => {
    const xml = sdnText
      .replace('BLUE HARBOR EXCHANGE LLC', 'BLUE HARBOR &amp; SONS')
      .replace('>TC8A5Eb5TatreUEcr5QThJibtceR9dn2PV<', '><![CDATA[TC8A5Eb5TatreUEcr5QThJibtceR9dn2PV]]><');
    const { records } = await parseOfacSdnAdvancedXml(chunks(xml));
    expect(records.find((r) => r.currency === 'USDT' && r.uid === '91003')).toEqual({
      currency: 'USDT',
      address: 'TC8A5Eb5TatreUEcr5QThJibtceR9dn2PV',
      name: 'BLUE HARBOR & SONS',
      uid: '91003',
    });
  });

  it('refuses the classic sdn.xml, naming the file to use instead', async () => {
    const classic = '<?xml version="1.0"?><sdnList><publshInformation /></sdnList>';
    await expectBadFile(parseOfacSdnAdvancedXml(chunks(classic)), /sdn_advanced\.xml/);
  });

  it('refuses a truncated file and one that is not XML', async () => {
    await expectBadFile(
      parseOfacSdnAdvancedXml(chunks(sdnText.slice(0, Math.floor(sdnText.length / 2)), 500)),
      /Not well-formed XML/,
    );
    await expectBadFile(parseOfacSdnAdvancedXml(chunks('address,currency,name\n')), /Not well-formed XML/);
  });
});

describe('sanctions CSV', () => {
  it('reads address,currency,name[,uid]: quoting, any column order and case, currencies upper-cased', async () => {
    const csv =
      '\uFEFFName,Currency,Address,UID\n' +
      '"NORTHWIND CYBER COLLECTIVE, LTD.",eth,0xDC6d495C24d5B5597B5EBa73948B85040fEe9521,CASE-1\n' +
      '\n' +
      'Internal fraud list,SOL, 5k8iuEj3HfV27qePWPj1XmtWEcc2FgcE9VuoX32vsZms ,\n';
    expect(await parseSanctionsCsv(chunks(csv, 5))).toEqual({
      asOf: null,
      records: [
        {
          currency: 'ETH',
          address: '0xdc6d495c24d5b5597b5eba73948b85040fee9521',
          name: 'NORTHWIND CYBER COLLECTIVE, LTD.',
          uid: 'CASE-1',
        },
        {
          currency: 'SOL',
          address: '5k8iuEj3HfV27qePWPj1XmtWEcc2FgcE9VuoX32vsZms',
          name: 'Internal fraud list',
          uid: null,
        },
      ],
    });
  });

  it('makes uid optional', async () => {
    const { records } = await parseSanctionsCsv(
      chunks('address,currency,name\nTWWpP9GNAS8U7De3KNdWS3NnUXeZL31NGs,TRX,X\n'),
    );
    expect(records).toEqual([
      { currency: 'TRX', address: 'TWWpP9GNAS8U7De3KNdWS3NnUXeZL31NGs', name: 'X', uid: null },
    ]);
  });

  it.each([
    ['a missing column', 'address,name\n0x1,x\n', /missing: currency/],
    ['an unknown column', 'address,currency,name,adress\n', /unknown: adress/],
    [
      'an empty address (with its line)',
      'address,currency,name\n0xab,ETH,x\n,ETH,y\n',
      /line 3: the address is empty/,
    ],
    ['an empty currency', 'address,currency,name\n0xab,,x\n', /line 2: the currency is empty/],
    ['a row with too many fields', 'address,currency,name\n0xab,ETH,x,extra\n', /Not a valid CSV file/],
    ['an unterminated quote', 'address,currency,name\n0xab,ETH,"x\n', /Not a valid CSV file/],
  ])('refuses %s', async (_what, csv, message) => {
    await expectBadFile(parseSanctionsCsv(chunks(csv)), message);
  });
});

describe('address normalisation', () => {
  it('lower-cases EVM hex only; keeps every other format as given (trimmed)', () => {
    expect(normaliseAddress(' 0xDC6d495C24d5B5597B5EBa73948B85040fEe9521 ')).toBe(
      '0xdc6d495c24d5b5597b5eba73948b85040fee9521',
    );
    expect(normaliseAddress('5k8iuEj3HfV27qePWPj1XmtWEcc2FgcE9VuoX32vsZms')).toBe(
      '5k8iuEj3HfV27qePWPj1XmtWEcc2FgcE9VuoX32vsZms',
    );
    expect(normaliseAddress('TWWpP9GNAS8U7De3KNdWS3NnUXeZL31NGs')).toBe('TWWpP9GNAS8U7De3KNdWS3NnUXeZL31NGs');
    expect(normaliseAddress('0xABC')).toBe('0xABC');
  });

  it('shows EVM addresses in EIP-55 form', () => {
    expect(displayAddress('0xdc6d495c24d5b5597b5eba73948b85040fee9521')).toBe(
      '0xDC6d495C24d5B5597B5EBa73948B85040fEe9521',
    );
    expect(displayAddress('5k8iuEj3HfV27qePWPj1XmtWEcc2FgcE9VuoX32vsZms')).toBe(
      '5k8iuEj3HfV27qePWPj1XmtWEcc2FgcE9VuoX32vsZms',
    );
  });

  it('accepts only real calendar dates as YYYY-MM-DD', () => {
    expect(parseIsoDay('2026-11-20')).toBe('2026-11-20');
    expect(parseIsoDay('2026-02-30')).toBeNull();
    expect(parseIsoDay('20 Nov 2026')).toBeNull();
  });
});
