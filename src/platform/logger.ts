import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Credentials never reach a log line: the headers that carry them are censored wherever they appear,
 * and request bodies are never logged.
 */
const REDACT = [
  'req.headers["x-api-key"]',
  'req.headers["x-service-agent-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["x-api-key"]',
  'headers["x-service-agent-key"]',
  'headers.authorization',
  '*.key',
  '*.token',
  '*.secret',
  'key',
  'token',
  'secret',
];

/** JSON logs on standard output, or on standard error for commands whose standard output is their result. */
export function createLogger(
  level: string,
  base: Record<string, unknown> = {},
  to: 'stdout' | 'stderr' = 'stdout',
): Logger {
  const options = {
    level,
    base: { service: 'riskwatch', ...base },
    redact: { paths: REDACT, censor: '[redacted]' },
    timestamp: pino.stdTimeFunctions.isoTime,
    formatters: { level: (label: string) => ({ level: label }) },
  };
  return to === 'stderr' ? pino(options, pino.destination({ dest: 2, sync: true })) : pino(options);
}
