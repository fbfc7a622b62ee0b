// Drives the official MCP TypeScript SDK client (@modelcontextprotocol/client,
// pinned in package.json) through a URL-mode elicitation (MCP 2026-07-28):
//
//   node connect.mjs <mcp-url> <access-token> <done-url>
//
// The client declares URL-mode elicitation and calls list_repos; the server
// (protect --connect-tool in front of a Go SDK server) answers with an
// input_required result naming the authorization server's connect page and
// a requestState. The elicitation handler stands in for the user: it never
// fetches the URL, only records it, POSTs to <done-url> (the test's switch
// for "the user connected the account") and accepts; the SDK retries the
// call with the requestState. It prints one JSON object describing what
// happened, and exits non-zero on any failure.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

async function main() {
    const [serverUrl, token, doneUrl] = process.argv.slice(2);
    const elicitations = [];
    const client = new Client(
        { name: 'mcpauth-connect', version: '1.0.0' },
        { capabilities: { elicitation: { url: {} } }, versionNegotiation: { mode: { pin: '2026-07-28' } } }
    );
    client.setRequestHandler('elicitation/create', async request => {
        elicitations.push(request.params);
        const done = await fetch(doneUrl, { method: 'POST' });
        if (!done.ok) throw new Error(`done-url: ${done.status}`);
        return { action: 'accept' };
    });
    const transport = new StreamableHTTPClientTransport(new URL(serverUrl), {
        requestInit: { headers: { Authorization: `Bearer ${token}` } }
    });
    await client.connect(transport);
    const res = await client.callTool({ name: 'list_repos', arguments: { org: 'acme' } });
    await client.close();
    const text = (res.content ?? []).filter(c => c.type === 'text').map(c => c.text).join('');
    console.log(JSON.stringify({ elicitations, text, isError: res.isError === true }));
}

main().catch(err => {
    console.error(err?.stack ?? String(err));
    process.exit(1);
});
