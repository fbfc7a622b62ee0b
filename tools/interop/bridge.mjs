// Drives the official MCP TypeScript SDK client (@modelcontextprotocol/client,
// pinned in package.json) over stdio: StdioClientTransport starts the command
// given on the command line (`mcpauth bridge ... URL`, wrapped by the test so
// that it can check every line of the bridge's stdout), then lists tools,
// calls echo and admin_echo (the bridge steps up for the latter) and prints
// one JSON object describing what happened. Exits non-zero on any failure.
//
//   node bridge.mjs <command> [args...]

import { Client } from '@modelcontextprotocol/client';
import { StdioClientTransport } from '@modelcontextprotocol/client/stdio';

const TIMEOUT_MS = 60_000;

async function main() {
    const [command, ...args] = process.argv.slice(2);
    if (!command) {
        throw new Error('usage: node bridge.mjs <command> [args...]');
    }
    const transport = new StdioClientTransport({ command, args, stderr: 'inherit' });
    const client = new Client({ name: 'mcpauth interop (TypeScript SDK, stdio)', version: '1.0.0' });
    await client.connect(transport);
    const tools = (await client.listTools()).tools.map(t => t.name).sort();
    const echo = await client.callTool({ name: 'echo', arguments: { message: 'over stdio' } });
    const admin = await client.callTool({ name: 'admin_echo', arguments: { message: 'through the bridge' } });
    await client.close();
    return {
        tools,
        echo: echo.content?.[0]?.text,
        admin: admin.content?.[0]?.text,
        adminIsError: Boolean(admin.isError)
    };
}

const timer = setTimeout(() => {
    console.error('bridge.mjs: timed out');
    process.exit(2);
}, TIMEOUT_MS);
main().then(
    report => {
        clearTimeout(timer);
        console.log(JSON.stringify(report));
    },
    err => {
        clearTimeout(timer);
        console.error('bridge.mjs:', err);
        process.exit(1);
    }
);
