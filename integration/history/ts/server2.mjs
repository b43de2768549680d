// A stdio MCP server on a pinned release of the official TypeScript SDK's
// 2.x server package, @modelcontextprotocol/server (McpServer over
// StdioServerTransport), with the tools of ./server.mjs: big, slow and echo.
//
//   node server2.mjs server-VERSION
import { load } from './sdk.mjs';

const { McpServer } = await load('@modelcontextprotocol/server');
const { StdioServerTransport } = await load('@modelcontextprotocol/server/stdio');
const { z } = await load('zod');

const server = new McpServer({ name: 'mcpstdio-history-ts-server', version: '0' });
const text = (s) => ({ content: [{ type: 'text', text: s }] });

server.registerTool('big', {
  description: 'returns N bytes of text',
  inputSchema: z.object({ bytes: z.number().int().optional() }),
}, async ({ bytes = 0 }) => text('x'.repeat(Math.min(Math.max(bytes, 0), 64 << 20))));

server.registerTool('slow', {
  description: 'works in steps, with progress, until done or cancelled',
  inputSchema: z.object({ steps: z.number().int().optional(), intervalMs: z.number().int().optional() }),
}, async ({ steps, intervalMs }, ctx) => {
  steps = steps > 0 ? steps : 10;
  intervalMs = intervalMs > 0 ? intervalMs : 10;
  const token = ctx.mcpReq._meta?.progressToken;
  const signal = ctx.mcpReq.signal;
  for (let i = 0; i < steps; i++) {
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, intervalMs);
      const stop = () => { clearTimeout(timer); reject(signal.reason ?? new Error('cancelled')); };
      if (signal.aborted) stop();
      else signal.addEventListener('abort', stop, { once: true });
    });
    if (token !== undefined) {
      await ctx.mcpReq.notify({
        method: 'notifications/progress',
        params: { progressToken: token, progress: i + 1, total: steps },
      });
    }
  }
  return text('done');
});

server.registerTool('echo', {
  description: 'returns its text',
  inputSchema: z.object({ text: z.string().optional() }),
}, async ({ text: t = '' }) => text(t));

await server.connect(new StdioServerTransport());
