import { Writable } from 'node:stream';
import { pino, type Level } from 'pino';

/** A pino logger whose lines (JSON text) are kept in `lines`, for asserting what is logged and what never is. */
export function capturingLogger(level: Level) {
  const lines: string[] = [];
  const logger = pino(
    { level },
    new Writable({
      write(chunk: Buffer, _enc, done) {
        lines.push(chunk.toString());
        done();
      },
    }),
  );
  return { logger, lines };
}
