// A stdio MCP server on a pinned release of the official TypeScript SDK
// (McpServer over StdioServerTransport) with the tools the server criteria
// need: big, slow and echo, as ../go/gosdkserver.
//
//   node server.mjs sdk-VERSION [--keepalive]
//
// --keepalive holds a timer until the transport closes, as a server with
// a connection or a watcher of its own does: node then exits at stdin EOF
// only if the transport closes at it.
import { load, args } from './sdk.mjs';

const { McpServer } = await load('@modelcontextprotocol/sdk/server/mcp.js');
const { StdioServerTransport } = await load('@modelcontextprotocol/sdk/server/stdio.js');
const { z } = await load('zod');

const server = new McpServer({ name: 'mcpstdio-history-ts-sdk', version: '0' });
const text = (s) => ({ content: [{ type: 'text', text: s }] });

server.registerTool('big', {
  description: 'returns N bytes of text',
  inputSchema: { bytes: z.number().int().optional() },
}, async ({ bytes = 0 }) => text('x'.repeat(Math.min(Math.max(bytes, 0), 64 << 20))));

server.registerTool('slow', {
  description: 'works in steps, with progress, until done or cancelled',
  inputSchema: { steps: z.number().int().optional(), intervalMs: z.number().int().optional() },
}, async ({ steps, intervalMs }, extra) => {
  steps = steps > 0 ? steps : 10;
  intervalMs = intervalMs > 0 ? intervalMs : 10;
  const token = extra._meta?.progressToken;
  for (let i = 0; i < steps; i++) {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, intervalMs);
      const stop = () => { clearTimeout(timer); reject(extra.signal.reason ?? new Error('cancelled')); };
      if (extra.signal.aborted) stop();
      else extra.signal.addEventListener('abort', stop, { once: true });
    });
    if (token !== undefined) {
      await extra.sendNotification({
        method: 'notifications/progress',
        params: { progressToken: token, progress: i + 1, total: steps },
      });
    }
  }
  return text('done');
});

server.registerTool('echo', {
  description: 'returns its text',
  inputSchema: { text: z.string().optional() },
}, async ({ text: t = '' }) => text(t));

const transport = new StdioServerTransport();
if (args.includes('--keepalive')) {
  const timer = setInterval(() => {}, 1 << 30);
  transport.onclose = () => clearInterval(timer);
}
await server.connect(transport);
