// A stdio MCP server on the official TypeScript SDK (McpServer over
// StdioServerTransport, as its README shows) offering the tools of the Go
// servers in ../doc.go: big, slow, echo and search.
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { z } from 'zod';

const maxBigBytes = 64 << 20; // big refuses more, as the Go servers do
const searchPage = 20;

const server = new McpServer({ name: 'mcpstdio-integration-ts-sdk', version: '0' });

const text = (s) => ({ content: [{ type: 'text', text: s }] });

server.registerTool('big', {
  description: 'returns N bytes of text',
  inputSchema: { bytes: z.number().int().optional() },
}, async ({ bytes = 0 }) => {
  if (bytes < 0 || bytes > maxBigBytes) {
    throw new Error(`big: bytes must be in [0, ${maxBigBytes}], got ${bytes}`);
  }
  return text('x'.repeat(bytes));
});

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

server.registerTool('search', {
  description: 'a bounded page of matching records, with nextCursor',
  inputSchema: { query: z.string().optional(), total: z.number().int().optional() },
}, async ({ query = '', total = 0 }) => {
  total = Math.max(total, 0);
  const n = Math.min(total, searchPage);
  const items = [];
  for (let i = 0; i < n; i++) {
    items.push({ id: i + 1, title: `record ${i + 1} matching ${JSON.stringify(query)}` });
  }
  const res = { items, truncated: total > n, totalEstimate: total };
  if (total > n) res.nextCursor = String(n);
  return { ...text(`Returned ${n} of ${total} matching records`), structuredContent: res };
});

await server.connect(new StdioServerTransport());
