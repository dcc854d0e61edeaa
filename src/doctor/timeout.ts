/** A step of a check that took longer than the doctor's `--timeout`. */
export class StepTimeout extends Error {
  constructor(ms: number) {
    super(`no answer within ${ms} ms`);
    this.name = 'StepTimeout';
  }
}

/**
 * `work`, or a StepTimeout after `ms`: every step of every check is bounded, so the doctor always ends (the
 * abandoned work is cut off when the command exits).
 */
export function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new StepTimeout(ms)), ms);
    timer.unref();
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}

/** An error as one line: its message, with the system code when the message does not already say it. */
export function describeError(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const code = (err as { code?: unknown }).code;
  const text = err.message || err.name;
  return typeof code === 'string' && !text.includes(code) ? `${text} (${code})` : text;
}
