import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { parse as parseCsv, CsvError } from 'csv-parse';
import { SaxesParser, type SaxesTagPlain } from 'saxes';
import { clip } from '../chains/registry.js';
import { AppError } from '../platform/errors.js';
import { normaliseAddress } from './addresses.js';

export const SANCTIONS_FORMATS = ['ofac-sdn-xml', 'csv'] as const;
export type SanctionsFormat = (typeof SANCTIONS_FORMATS)[number];

/** One listed address: normalised (see normaliseAddress), with the list's currency label and party. */
export interface SanctionRecord {
  currency: string;
  address: string;
  name: string;
  uid: string | null;
}

/** A file's text in pieces, as a stream (`createReadStream(file, { encoding: 'utf8' })`) yields it. */
export type TextChunks = AsyncIterable<string> | Iterable<string>;

export interface SanctionsFile {
  /** The file's publication date (YYYY-MM-DD), when the format carries one. */
  asOf: string | null;
  records: SanctionRecord[];
}

const MAX_ADDRESS = 200;
const MAX_CURRENCY = 20;
const MAX_NAME = 500;

const badFile = (detail: string) => new AppError('invalid_request', detail);

/** A calendar date that exists, as YYYY-MM-DD (rejects 2026-02-30). */
export function isoDay(year: number, month: number, day: number): string | null {
  const d = new Date(Date.UTC(year, month - 1, day));
  if (year < 1 || year > 9999 || d.getUTCMonth() !== month - 1 || d.getUTCDate() !== day) return null;
  return d.toISOString().slice(0, 10);
}

export function parseIsoDay(value: string): string | null {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(value.trim());
  return m ? isoDay(Number(m[1]), Number(m[2]), Number(m[3])) : null;
}

function checkRecord(record: SanctionRecord, where: string): SanctionRecord {
  if (!record.address) throw badFile(`${where}: the address is empty.`);
  if (record.address.length > MAX_ADDRESS)
    throw badFile(`${where}: the address is longer than ${MAX_ADDRESS} characters.`);
  if (!record.currency) throw badFile(`${where}: the currency is empty.`);
  if (record.currency.length > MAX_CURRENCY)
    throw badFile(
      `${where}: the currency "${clip(record.currency)}" is longer than ${MAX_CURRENCY} characters.`,
    );
  return { ...record, name: record.name.slice(0, MAX_NAME) };
}

const DIGITAL_CURRENCY_FEATURE = /^\s*Digital Currency Address\s*-\s*(\S.*?)\s*$/i;

/** The local part of an element name: `ns:Feature` → `Feature` (the file's namespace varies by release). */
const local = (name: string) => name.slice(name.indexOf(':') + 1);

interface Party {
  uid: string | null;
  primaryName: string | null;
  firstName: string | null;
  features: { typeId: string; values: string[] }[];
}

/**
 * Reads OFAC's "SDN advanced" XML (sdn_advanced.xml, ~100 MB) as a stream and returns its digital currency
 * addresses, every currency it lists. The structure assumed, matched by local element names so a changed
 * namespace or prefix does not matter:
 *
 * ```xml
 * <Sanctions xmlns="…/ADVANCED_XML">
 *   <DateOfIssue><Year>2026</Year><Month>11</Month><Day>20</Day></DateOfIssue>  (or …<Date><Year>… inside)
 *   <ReferenceValueSets>
 *     <FeatureTypeValues>
 *       <FeatureType ID="345">Digital Currency Address - ETH</FeatureType>   (id → currency label "ETH")
 *     </FeatureTypeValues>
 *   </ReferenceValueSets>
 *   <DistinctParties>
 *     <DistinctParty FixedRef="36216">                                         (FixedRef = the SDN uid)
 *       <Profile ID="36216">
 *         <Identity><Alias Primary="true"><DocumentedName>
 *           <DocumentedNamePart><NamePartValue>LAZARUS GROUP</NamePartValue></DocumentedNamePart>
 *         </DocumentedName></Alias></Identity>
 *         <Feature FeatureTypeID="345">
 *           <FeatureVersion><VersionDetail>0x098B…2f96</VersionDetail></FeatureVersion>
 *         </Feature>
 *       </Profile>
 *     </DistinctParty>
 *   </DistinctParties>
 * </Sanctions>
 * ```
 *
 * Features of any other type (birthdates, vessel flags, locations…) are ignored. Feature type ids are
 * resolved at the end, so the order of the sections does not matter either. The party's name is its
 * primary alias's first documented name (its parts joined by spaces), else its first alias's.
 */
export async function parseOfacSdnAdvancedXml(input: TextChunks): Promise<SanctionsFile> {
  const parser = new SaxesParser<{ xmlns: false }>({ xmlns: false });
  const stack: string[] = [];
  const featureTypes = new Map<string, string>();
  const dateParts: Partial<Record<'Year' | 'Month' | 'Day', number>> = {};
  const pending: { typeId: string; address: string; name: string; uid: string | null }[] = [];

  let text: string | null = null;
  let featureTypeId: string | null = null;
  let party: Party | null = null;
  let feature: Party['features'][number] | null = null;
  let alias: { primary: boolean; parts: string[]; names: number } | null = null;

  const inside = (name: string) => stack.includes(name);
  const capture = () => {
    text = '';
  };
  const captured = () => {
    const value = (text ?? '').trim();
    text = null;
    return value;
  };

  parser.on('opentag', (tag: SaxesTagPlain) => {
    const name = local(tag.name);
    const attr = (key: string) => {
      const value = tag.attributes[key];
      return typeof value === 'string' && value.trim() ? value.trim() : null;
    };
    if (stack.length === 0 && name !== 'Sanctions')
      throw badFile(
        `Not an OFAC SDN advanced XML file: the root element is <${tag.name}>, not <Sanctions>` +
          (name === 'sdnList' ? ' (this is the classic sdn.xml; import sdn_advanced.xml).' : '.'),
      );
    stack.push(name);
    switch (name) {
      case 'Year':
      case 'Month':
      case 'Day':
        if (inside('DateOfIssue')) capture();
        break;
      case 'FeatureType':
        if (inside('FeatureTypeValues')) {
          featureTypeId = attr('ID');
          capture();
        }
        break;
      case 'DistinctParty':
        party = { uid: attr('FixedRef'), primaryName: null, firstName: null, features: [] };
        break;
      case 'Profile':
        if (party && !party.uid) party.uid = attr('ID') ?? attr('FixedRef');
        break;
      case 'Alias':
        if (party) alias = { primary: attr('Primary') === 'true', parts: [], names: 0 };
        break;
      case 'DocumentedName':
        if (alias) alias.names += 1;
        break;
      case 'NamePartValue':
        // Only the alias's first documented name: later ones are the same name in other scripts.
        if (alias?.names === 1) capture();
        break;
      case 'Feature': {
        const typeId = attr('FeatureTypeID');
        if (party && typeId) feature = { typeId, values: [] };
        break;
      }
      case 'VersionDetail':
        if (feature) capture();
        break;
    }
  });

  const onText = (t: string) => {
    if (text !== null) text += t;
  };
  parser.on('text', onText);
  parser.on('cdata', onText);

  parser.on('closetag', (tag: SaxesTagPlain) => {
    const name = local(tag.name);
    stack.pop();
    switch (name) {
      case 'Year':
      case 'Month':
      case 'Day':
        if (text !== null) dateParts[name] ??= Number(captured());
        break;
      case 'FeatureType': {
        if (text === null) break;
        const label = DIGITAL_CURRENCY_FEATURE.exec(captured())?.[1];
        if (featureTypeId && label) featureTypes.set(featureTypeId, label.toUpperCase());
        featureTypeId = null;
        break;
      }
      case 'NamePartValue':
        if (text !== null) {
          const part = captured();
          if (part) alias?.parts.push(part);
        }
        break;
      case 'Alias':
        if (party && alias && alias.parts.length > 0) {
          const full = alias.parts.join(' ');
          if (alias.primary) party.primaryName ??= full;
          party.firstName ??= full;
        }
        alias = null;
        break;
      case 'VersionDetail':
        if (text !== null) {
          const value = captured();
          if (value) feature?.values.push(value);
        }
        break;
      case 'Feature':
        if (party && feature) party.features.push(feature);
        feature = null;
        break;
      case 'DistinctParty':
        if (party) {
          const partyName = party.primaryName ?? party.firstName ?? '';
          for (const f of party.features)
            for (const address of f.values)
              pending.push({ typeId: f.typeId, address, name: partyName, uid: party.uid });
        }
        party = null;
        break;
    }
  });

  // Only the parser's own errors mean a malformed file; a read error stays what it is.
  const feed = (step: () => void) => {
    try {
      step();
    } catch (err) {
      if (err instanceof AppError) throw err;
      throw badFile(`Not well-formed XML: ${(err as Error).message}`);
    }
  };
  let first = true;
  for await (const chunk of input) {
    feed(() => parser.write(first ? chunk.replace(/^\uFEFF/, '') : chunk));
    first = false;
  }
  feed(() => parser.close());

  const records: SanctionRecord[] = [];
  for (const p of pending) {
    const currency = featureTypes.get(p.typeId);
    if (!currency) continue;
    records.push(
      checkRecord(
        { currency, address: normaliseAddress(p.address), name: p.name, uid: p.uid },
        `SDN entry ${p.uid ?? '(no uid)'}`,
      ),
    );
  }
  const { Year, Month, Day } = dateParts;
  const asOf =
    Year !== undefined && Month !== undefined && Day !== undefined ? isoDay(Year, Month, Day) : null;
  return { asOf, records };
}

const CSV_REQUIRED = ['address', 'currency', 'name'] as const;
const CSV_COLUMNS = new Set<string>([...CSV_REQUIRED, 'uid']);

interface CsvRow {
  record: Record<string, string | undefined>;
  info: { lines: number };
}

/**
 * An operator's own list as CSV: a header `address,currency,name` with an optional `uid` column (any
 * order, case-insensitive), RFC 4180 quoting. Currencies are upper-cased so they read like OFAC's labels.
 */
export async function parseSanctionsCsv(input: TextChunks): Promise<SanctionsFile> {
  const parser = parseCsv({
    bom: true,
    trim: true,
    skip_empty_lines: true,
    info: true,
    columns: (header: string[]) => {
      const columns = header.map((h) => h.trim().toLowerCase());
      const missing = CSV_REQUIRED.filter((c) => !columns.includes(c));
      const unknown = columns.filter((c) => !CSV_COLUMNS.has(c));
      if (missing.length || unknown.length)
        throw badFile(
          `The CSV header must be address,currency,name (optionally uid)` +
            (missing.length ? `; missing: ${missing.join(', ')}` : '') +
            (unknown.length ? `; unknown: ${unknown.map((c) => clip(c, 40)).join(', ')}` : '') +
            '.',
        );
      return columns;
    },
  });
  const records: SanctionRecord[] = [];
  try {
    await pipeline(Readable.from(input), parser, async (rows: AsyncIterable<CsvRow>) => {
      for await (const { record, info } of rows)
        records.push(
          checkRecord(
            {
              address: normaliseAddress(record.address ?? ''),
              currency: (record.currency ?? '').toUpperCase(),
              name: record.name ?? '',
              uid: record.uid || null,
            },
            `line ${info.lines}`,
          ),
        );
    });
  } catch (err) {
    if (err instanceof CsvError) throw badFile(`Not a valid CSV file: ${err.message}`);
    throw err;
  }
  return { asOf: null, records };
}

export function parseSanctionsFile(format: SanctionsFormat, input: TextChunks) {
  return format === 'csv' ? parseSanctionsCsv(input) : parseOfacSdnAdvancedXml(input);
}
