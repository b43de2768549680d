// A command-line host on a pinned release of the official TypeScript SDK's
// client (Client over StdioClientTransport), for mcpstdio hostprobe: it
// starts the server it is given, calls one tool, prints the result's size
// and exits: 0 with a result, 1 with an error.
//
//   node call.mjs sdk-VERSION [--timeout MS] [--stderr-pipe] -- COMMAND ARGS...
//
// --stderr-pipe starts the server with stderr: 'pipe', the transport's
// option, and never reads the stream it gives.
import { load, args } from './sdk.mjs';

const { Client } = await load('@modelcontextprotocol/sdk/client/index.js');
const { StdioClientTransport } = await load('@modelcontextprotocol/sdk/client/stdio.js');

const argv = args.slice();
let timeout;
let stderr;
while (argv.length && argv[0] !== '--') {
  const flag = argv.shift();
  if (flag === '--timeout') timeout = Number(argv.shift());
  else if (flag === '--stderr-pipe') stderr = 'pipe';
  else fail(`unknown flag ${flag}`, 2);
}
argv.shift();
if (!argv.length) fail('usage: node call.mjs sdk-VERSION [--timeout MS] [--stderr-pipe] -- COMMAND ARGS...', 2);

function fail(msg, code = 1) {
  process.stderr.write(`call.mjs: ${msg}\n`);
  process.exit(code);
}

const transport = new StdioClientTransport({ command: argv[0], args: argv.slice(1), env: { ...process.env }, ...(stderr && { stderr }) });
const client = new Client({ name: 'mcpstdio-history-ts-call', version: '0' });
let code = 0;
try {
  await client.connect(transport);
  const begin = Date.now();
  const options = timeout === undefined ? undefined : { timeout };
  const result = await client.callTool({ name: 'echo', arguments: { text: 'hello from call.mjs' } }, undefined, options);
  if (result.isError) throw new Error('the tool reported an error');
  process.stdout.write(`tools/call echo: ${JSON.stringify(result).length} bytes of result in ${Date.now() - begin} ms\n`);
} catch (err) {
  process.stderr.write(`call.mjs: ${(err && err.message) || String(err)}\n`);
  code = 1;
}
await client.close().catch(() => {});
process.exit(code);
