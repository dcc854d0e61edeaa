/**
 * A promise's outcome as a value, like one entry of `Promise.allSettled`: for a read that may fail on its
 * own while the caller goes on (and must not become an unhandled rejection while it waits on other work).
 */
export function settle<T>(promise: Promise<T>): Promise<PromiseSettledResult<T>> {
  return promise.then(
    (value) => ({ status: 'fulfilled', value }),
    (reason: unknown) => ({ status: 'rejected', reason }),
  );
}
