// Loads the official TypeScript SDK, and zod, from the pinned package set
// in the directory given as the first argument (sdk-VERSION, installed there
// by `npm ci` from its package-lock.json), so that one server and one client
// serve every pinned release.
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const dir = process.argv[2];
if (!dir) {
  process.stderr.write('usage: node server.mjs|call.mjs PINNED-DIR ...\n');
  process.exit(2);
}
const require = createRequire(path.join(path.resolve(dir), 'package.json'));

// load imports a module of the pinned package set by its package path.
export const load = (spec) => import(pathToFileURL(require.resolve(spec)).href);
export const args = process.argv.slice(3);
