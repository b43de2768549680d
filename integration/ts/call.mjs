// A command-line host on the official TypeScript SDK, for mcpstdio
// hostprobe (../hostprobe_test.go): Client over StdioClientTransport starts
// the server it is given, calls one tool (or, with --call-last, lists the
// tools and calls the last one), prints the result and exits: 0 with a
// result, 1 with an error.
//
//   node call.mjs [--timeout MS] [--tool NAME] [--call-last] -- COMMAND ARGS...
//
// --timeout is the SDK's own RequestOptions.timeout (default
// DEFAULT_REQUEST_TIMEOUT_MSEC, 60 s, in dist/esm/shared/protocol.js).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

const argv = process.argv.slice(2);
let timeout;
let tool = 'echo';
let callLast = false;
while (argv.length && argv[0] !== '--') {
  const flag = argv.shift();
  if (flag === '--timeout') timeout = Number(argv.shift());
  else if (flag === '--tool') tool = argv.shift();
  else if (flag === '--call-last') callLast = true;
  else fail(`unknown flag ${flag}`, 2);
}
argv.shift();
if (!argv.length) fail('usage: node call.mjs [--timeout MS] [--tool NAME] [--call-last] -- COMMAND ARGS...', 2);

function fail(msg, code = 1) {
  process.stderr.write(`call.mjs: ${msg}\n`);
  process.exit(code);
}

const message = (err) => (err && err.message) || String(err);
const transport = new StdioClientTransport({ command: argv[0], args: argv.slice(1), env: { ...process.env } });
const client = new Client({ name: 'mcpstdio-integration-ts-call', version: '0' });
let code = 0;
try {
  await client.connect(transport);
  const options = timeout === undefined ? undefined : { timeout };
  if (callLast) {
    const { tools } = await client.listTools(undefined, options);
    if (!tools.length) throw new Error('tools/list: no tools');
    tool = tools[tools.length - 1].name;
    process.stdout.write(`listed ${tools.length} tools, the last ${tool}\n`);
  }
  const begin = Date.now();
  const result = await client.callTool({ name: tool, arguments: { text: 'hello from call.mjs' } }, undefined, options);
  if (result.isError) throw new Error('the tool reported an error');
  process.stdout.write(`tools/call ${tool}: ${JSON.stringify(result).length} bytes of result in ${Date.now() - begin} ms\n`);
} catch (err) {
  process.stderr.write(`call.mjs: ${message(err)}\n`);
  code = 1;
}
await client.close().catch(() => {});
process.exit(code);
