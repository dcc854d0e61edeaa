import type { Logger } from './logger.js';

type Step = { name: string; run: () => unknown };

/**
 * Ordered graceful shutdown (house style 7): fail readiness → stop accepting → drain HTTP → close
 * workers → queues → ORM → Redis. Steps run in the order they were added; the whole sequence has a
 * deadline after which the process exits anyway.
 */
export class Shutdown {
  private readonly steps: Step[] = [];
  private started: Promise<void> | undefined;
  shuttingDown = false;

  constructor(
    private readonly logger: Logger,
    private readonly deadlineMs: number,
  ) {}

  add(name: string, run: Step['run']): void {
    this.steps.push({ name, run });
  }

  listen(): void {
    const onSignal = (signal: NodeJS.Signals) => {
      this.logger.info({ signal }, 'shutting down');
      void this.run().then(() => process.exit(0));
    };
    process.once('SIGTERM', onSignal);
    process.once('SIGINT', onSignal);
  }

  run(): Promise<void> {
    this.started ??= this.execute();
    return this.started;
  }

  private async execute(): Promise<void> {
    this.shuttingDown = true;
    const deadline = setTimeout(() => {
      this.logger.error('shutdown deadline passed; exiting');
      process.exit(1);
    }, this.deadlineMs);
    deadline.unref();
    for (const step of this.steps) {
      try {
        await step.run();
      } catch (err) {
        this.logger.warn(
          { step: step.name, err: { message: (err as Error).message } },
          'shutdown step failed',
        );
      }
    }
    clearTimeout(deadline);
    this.logger.info('shutdown complete');
  }
}
