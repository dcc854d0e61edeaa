import { WebhookUrlPolicy } from '../webhooks/ssrf.js';
import type { WebhooksSettings } from '../webhooks/settings.js';
import type { Finding } from './report.js';

/**
 * Cloud instance-metadata addresses (AWS, GCP and Azure; AWS over IPv6; Alibaba): a webhook that reaches
 * one can read the machine's cloud credentials. An allow list opening one is a failure.
 */
const METADATA_ADDRESSES = ['169.254.169.254', 'fd00:ec2::254', '100.100.100.200'];
/** This machine: its metrics listener, and whatever else listens on loopback. */
const LOOPBACK_ADDRESSES = ['127.0.0.1', '::1'];

/**
 * The webhook SSRF guard's settings (src/webhooks/ssrf.ts), judged by the guard itself: which of the
 * addresses an attacker would aim a webhook at it lets through. And the key webhook signing secrets are
 * sealed under.
 */
export function checkWebhooks(settings: WebhooksSettings): Finding[] {
  const policy = new WebhookUrlPolicy({ allowCidrs: settings.allow_cidrs, allowHttp: settings.allow_http });
  return [
    allowListFinding(policy, settings.allow_cidrs),
    httpFinding(settings.allow_http),
    keyFinding(settings),
  ];
}

function allowListFinding(policy: WebhookUrlPolicy, cidrs: readonly string[]): Finding {
  const check = 'webhooks:allow-cidrs';
  if (cidrs.length === 0)
    return { check, status: 'ok', detail: 'none: webhooks reach public addresses only' };
  const list = cidrs.join(', ');
  const metadata = METADATA_ADDRESSES.filter((a) => policy.isAllowedAddress(a));
  if (metadata.length > 0)
    return {
      check,
      status: 'fail',
      detail:
        `${list} lets webhooks reach the cloud metadata address ${metadata.join(', ')}: a customer's ` +
        "webhook URL could read this machine's cloud credentials; narrow RISKWATCH_WEBHOOK_ALLOW_CIDRS",
    };
  const loopback = LOOPBACK_ADDRESSES.filter((a) => policy.isAllowedAddress(a));
  return {
    check,
    status: 'warn',
    detail:
      `${list}: webhooks may reach these private addresses` +
      (loopback.length > 0 ? `, this machine's own services included (${loopback.join(', ')})` : '') +
      '; keep it to the in-VPC receivers, as no service there should trust a request for coming from riskwatch',
  };
}

function httpFinding(allowHttp: boolean): Finding {
  return allowHttp
    ? {
        check: 'webhooks:allow-http',
        status: 'warn',
        detail:
          'http:// receivers accepted: signed event payloads can be read in transit (in-VPC receivers only)',
      }
    : { check: 'webhooks:allow-http', status: 'ok', detail: 'https:// receivers only' };
}

function keyFinding(settings: WebhooksSettings): Finding {
  const check = 'webhooks:secrets-key';
  if (!settings.secrets_key)
    return {
      check,
      status: 'warn',
      detail:
        'RISKWATCH_SECRETS_KEY is empty: no webhook endpoint can be created or rotated (503 ' +
        'secrets_key_missing) and stored secrets cannot sign',
    };
  const previous = settings.secrets_previous_keys.length;
  return previous > 0
    ? {
        check,
        status: 'info',
        detail:
          `set, with ${previous} previous key(s): a key rotation in progress; after ` +
          '`riskwatch secrets rotate-key`, drop RISKWATCH_SECRETS_PREVIOUS_KEYS',
      }
    : { check, status: 'ok', detail: 'set' };
}
