// evmole's package.json gives its types to the `require`/browser entries only, not to the Node ESM one
// (`exports["."].node`): the same API, typed by the file it ships.
declare module 'evmole' {
  export * from 'evmole/dist/evmole.js';
}
