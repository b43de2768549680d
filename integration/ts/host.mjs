// A host on the official TypeScript SDK: Client over StdioClientTransport,
// which starts the server the way an application does, driven by the Go
// adapter (../tssdk.go) over this process's own stdin and stdout, one JSON
// object a line:
//
//   node host.mjs [--max-buffer N] -- COMMAND ARGS...
//
//   in:  {"op":"call","id":1,"name":"echo","arguments":{...}}
//        {"op":"cancel","id":1}        abort call 1 (the SDK sends notifications/cancelled)
//        end of stdin                  close the client, which stops the server
//   out: {"ready":true,"pid":N} or {"fatal":"..."}
//        {"id":1,"result":{...}} or {"id":1,"error":"..."}
//        {"closed":true}
//
// The server gets this process's environment (the Go side passes the
// command's own) and its stderr (the transport's default, 'inherit').
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { createInterface } from 'node:readline';

const argv = process.argv.slice(2);
let maxBufferSize;
while (argv.length && argv[0] !== '--') {
  const flag = argv.shift();
  if (flag === '--max-buffer') maxBufferSize = Number(argv.shift());
  else fatal(`unknown flag ${flag}`);
}
argv.shift();
if (!argv.length) fatal('usage: node host.mjs [--max-buffer N] -- COMMAND ARGS...');

function out(obj) {
  process.stdout.write(JSON.stringify(obj) + '\n');
}

function fatal(msg) {
  out({ fatal: msg });
  process.exit(1);
}

const message = (err) => (err && err.message) || String(err);

const transport = new StdioClientTransport({
  command: argv[0],
  args: argv.slice(1),
  env: { ...process.env },
  maxBufferSize,
});
const client = new Client({ name: 'mcpstdio-integration-ts-sdk', version: '0' });
const calls = new Map();

try {
  await client.connect(transport);
} catch (err) {
  out({ fatal: `connect: ${message(err)}` });
  await client.close().catch(() => {});
  process.exit(1);
}
out({ ready: true, pid: transport.pid });

const input = createInterface({ input: process.stdin, crlfDelay: Infinity });
input.on('line', (line) => {
  let req;
  try {
    req = JSON.parse(line);
  } catch (err) {
    out({ fatal: `bad request line: ${message(err)}` });
    return;
  }
  if (req.op === 'cancel') {
    calls.get(req.id)?.abort(new Error('the Go caller cancelled the call'));
    return;
  }
  if (req.op !== 'call') {
    out({ id: req.id, error: `unknown op ${req.op}` });
    return;
  }
  const ac = new AbortController();
  calls.set(req.id, ac);
  client.callTool({ name: req.name, arguments: req.arguments ?? {} }, undefined, { signal: ac.signal })
    .then((result) => out({ id: req.id, result }), (err) => out({ id: req.id, error: message(err) }))
    .finally(() => calls.delete(req.id));
});
input.on('close', async () => {
  for (const ac of calls.values()) ac.abort(new Error('the host is closing'));
  await client.close().catch(() => {});
  out({ closed: true });
  process.exit(0);
});
