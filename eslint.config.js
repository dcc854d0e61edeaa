import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import js from '@eslint/js';
import importX, { createNodeResolver } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';

/*
 * Imports point one way (README, "Layout"):
 *
 *   src/platform ← src/db, src/http ← features ← src/config.ts, src/database.ts ← src/runtime.ts
 *     ← src/api.ts, workers/ ← src/main.ts
 *
 * - src/platform (configuration machinery, logger, errors, connections, metrics, shutdown) imports nothing
 *   else of src/.
 * - src/db (the ORM connection, shared SQL idioms, migrations) imports only src/platform: it names no
 *   feature's entities (src/database.ts, the composition, does).
 * - src/http is a toolkit (app factory, middleware, route specs, OpenAPI, docs, problem+json, the server):
 *   it imports only src/platform. It knows no feature; src/api.ts hands it the features' routes.
 * - Features are the other folders of src/: accounts, chains, risk, lists, usage, impact, health, jobs (the
 *   job contracts), events (the event log), watchlists and webhooks. They never import the assembly above
 *   them: settings are declared in the feature's settings.ts, services arrive as constructor arguments.
 * - A feature uses another feature through its services, types, settings and pure functions, never through
 *   its entities (listed only by src/database.ts), its routes (served only by src/api.ts) or its CLI
 *   commands (registered only by src/main.ts).
 * - src/events sits below watchlists and webhooks, which never import each other: watchlists appends
 *   events, webhooks subscribes to them at composition (src/runtime.ts), and anything else one needs of the
 *   other is a function handed in there.
 * - The assembly: src/config.ts composes the features' settings, src/database.ts names their entities,
 *   src/runtime.ts builds the services, src/api.ts (the api role) and workers/ (the worker and scheduler
 *   roles) run them. src/main.ts, the command line, is the one file of src/ that imports workers/.
 * - No file of src/ or workers/ is over 400 lines (max-lines): a room that grows past it is split by what
 *   it serves.
 */
const ROOT = import.meta.dirname;
const FEATURES = readdirSync(join(ROOT, 'src'), { withFileTypes: true })
  .filter((entry) => entry.isDirectory() && !['platform', 'http', 'db'].includes(entry.name))
  .map((entry) => entry.name);

const LAYERS = [
  {
    target: 'src/platform',
    from: 'src',
    except: ['./platform'],
    message: 'src/platform is the bottom layer: it imports nothing else of src/.',
  },
  {
    target: 'src/db',
    from: 'src',
    except: ['./platform', './db'],
    message:
      'src/db is below the features: it imports only src/platform (src/database.ts names the entities).',
  },
  {
    target: 'src/events',
    from: ['src/watchlists', 'src/webhooks'],
    message: 'src/events is below watchlists and webhooks: they append to it and subscribe to it, not back.',
  },
  {
    target: 'src/watchlists',
    from: 'src/webhooks',
    message:
      'watchlists never imports webhooks: it appends events (src/events); webhooks subscribes at composition.',
  },
  {
    target: 'src/webhooks',
    from: 'src/watchlists',
    message:
      'webhooks never imports watchlists: what it needs of them is handed in at composition (src/runtime.ts).',
  },
  {
    target: 'src/http',
    from: 'src',
    except: ['./platform', './http'],
    message: 'src/http is the toolkit: it imports only src/platform (src/api.ts gives it the features).',
  },
  {
    target: FEATURES.map((feature) => `src/${feature}`),
    from: ['src/config.ts', 'src/database.ts', 'src/runtime.ts', 'src/api.ts', 'src/main.ts'],
    message:
      'a feature never imports the assembly: declare settings in its settings.ts, take services as arguments.',
  },
  ...FEATURES.map((feature) => ({
    target: `src/${feature}`,
    from: [`src/!(${feature})/{entities,routes,cli}.ts`],
    message: "use another feature's service, not its entities, routes or CLI commands.",
  })),
  { target: 'src/config.ts', from: ['src/runtime.ts', 'src/api.ts'], message: 'the assembly runs one way.' },
  { target: 'src/runtime.ts', from: 'src/api.ts', message: 'the assembly runs one way.' },
  {
    target: ['src/*/**', 'src/!(main).ts'],
    from: 'workers',
    message: 'nothing in src/ imports workers/ but src/main.ts, which starts them.',
  },
  { target: 'workers', from: 'src/api.ts', message: 'workers/ and src/api.ts are roles side by side.' },
  {
    target: ['src', 'workers'],
    from: 'src/main.ts',
    message: 'src/main.ts is the entry point: nothing imports it.',
  },
];

const restrictedPaths = (zones) => ['error', { basePath: ROOT, zones }];
export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'src/db/migrations/Migration*.ts'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': ['error', { checksVoidReturn: { arguments: false } }],
      '@typescript-eslint/ban-ts-comment': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_' }],
      '@typescript-eslint/consistent-type-imports': 'error',
    },
  },
  {
    files: ['src/**/*.ts', 'workers/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      // `./x.js` in an import is the TypeScript file `./x.ts`.
      'import-x/resolver-next': [createNodeResolver({ extensionAlias: { '.js': ['.ts', '.js'] } })],
    },
    rules: {
      'import-x/no-restricted-paths': restrictedPaths(LAYERS),
      'max-lines': ['error', { max: 400, skipBlankLines: false, skipComments: false }],
    },
  },
  { files: ['eslint.config.js'], extends: [tseslint.configs.disableTypeChecked] },
);
