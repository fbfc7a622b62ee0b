// Drives the official MCP TypeScript SDK client (@modelcontextprotocol/client,
// pinned in package.json) against an MCP server protected by mcpauth whose
// authorization server approves automatically (`mcpauth demo --no-client`):
//
//   node stepup.mjs <mcp-url>
//
// The SDK does discovery, Dynamic Client Registration (with the scope of the
// first challenge, as the SDK does), PKCE and the code exchange itself. The
// provider (headless.mjs) stands in for the browser: it fetches the
// authorization URL without following the final redirect and hands the
// callback parameters to transport.finishAuth. After listing tools and calling echo (mcp:tools), it
// calls admin_echo (mcp:admin): the server answers 403 insufficient_scope and
// the SDK's own step-up path re-authorizes the same registered client for the
// wider scope. It prints one JSON object describing what happened, and exits
// non-zero on any failure.

import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { HeadlessProvider, finish as finishWith, isUnauthorized, recordingFetch, text } from './headless.mjs';

async function main() {
    const serverUrl = new URL(process.argv[2]);
    const provider = new HeadlessProvider();
    const requests = [];
    // Every request the SDK makes goes through here, so the report shows
    // the registrations and the insufficient_scope answers it got.
    const loggedFetch = recordingFetch(requests);
    const newTransport = () => new StreamableHTTPClientTransport(serverUrl, { authProvider: provider, fetch: loggedFetch });

    const finish = transport => finishWith(provider, transport);
    const client = new Client({ name: 'mcpauth-interop', version: '1.0.0' });
    let transport = newTransport();
    try {
        await client.connect(transport);
    } catch (err) {
        if (!isUnauthorized(err)) throw err;
        await finish(transport);
        transport = newTransport();
        await client.connect(transport);
    }
    const registeredScope = provider.info?.scope;
    const tools = await client.listTools();
    const echo = await client.callTool({ name: 'echo', arguments: { message: 'hello' } });
    let admin;
    try {
        admin = await client.callTool({ name: 'admin_echo', arguments: { message: 'step up' } });
    } catch (err) {
        if (!isUnauthorized(err)) throw err;
        await finish(transport); // the SDK started the step-up authorization
        admin = await client.callTool({ name: 'admin_echo', arguments: { message: 'step up' } });
    }
    const whoami = await client.callTool({ name: 'whoami', arguments: {} });
    await client.close();

    const report = {
        tools: tools.tools.map(t => t.name).sort(),
        echo: text(echo),
        admin: text(admin),
        adminIsError: admin.isError === true,
        whoami: whoami.structuredContent ?? JSON.parse(text(whoami)),
        clientId: provider.info?.client_id,
        registeredScope,
        registrations: requests.filter(r => r.method === 'POST' && r.url === provider.discovery?.authorizationServerMetadata?.registration_endpoint).length,
        authorizationScopes: provider.authorizationScopes,
        insufficientScope: requests.filter(r => r.status === 403 && /insufficient_scope/.test(r.wwwAuthenticate ?? '')).map(r => r.wwwAuthenticate),
        tokenScope: provider.savedTokens?.scope
    };
    process.stdout.write(JSON.stringify(report) + '\n');
}

main().then(
    () => process.exit(0),
    err => {
        process.stderr.write(`interop: ${err?.stack ?? err}\n`);
        process.exit(1);
    }
);
