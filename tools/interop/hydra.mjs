// Drives the official MCP TypeScript SDK client (@modelcontextprotocol/client,
// pinned in package.json) through `mcpauth protect --issuer-profile hydra`
// in front of a real Ory Hydra, as a machine-to-machine host:
//
//   HYDRA_CLIENT_SECRET=... node hydra.mjs <mcp-url> <hydra-issuer> <client-id> <audience>
//
// The SDK's own ClientCredentialsProvider does the work: on protect's 401 it
// reads the protected resource metadata, Hydra's metadata, and asks Hydra's
// token endpoint for a client-credentials token (client_secret_basic). The
// SDK sends the RFC 8707 resource, which Hydra ignores: Hydra puts in "aud"
// only the audience parameter, so the provider below adds it to the token
// request, the one Hydra-specific line. The first token has the scope of
// protect's challenge (mcp:tools); headers needs mcp:admin, and the SDK's
// step-up path answers the 403 insufficient_scope with a second
// client-credentials request for both. It lists tools, calls echo and
// headers, and prints one JSON object describing what happened (the token's
// aud and scp, never the token), exiting non-zero on any failure.

import { Client, ClientCredentialsProvider, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

import { TIMEOUT_MS, isUnauthorized, text } from './headless.mjs';

class HydraClientCredentials extends ClientCredentialsProvider {
    constructor(options, audience) {
        super(options);
        this.audience = audience;
    }
    prepareTokenRequest(scope) {
        const params = super.prepareTokenRequest(scope);
        params.set('audience', this.audience);
        return params;
    }
}

function claims(jwt) {
    return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString('utf8'));
}

async function main() {
    const [serverUrl, issuer, clientId, audience] = process.argv.slice(2);
    const provider = new HydraClientCredentials(
        { clientId, clientSecret: process.env.HYDRA_CLIENT_SECRET, expectedIssuer: issuer, scope: 'mcp:tools mcp:admin' },
        audience
    );
    const tokenRequests = [];
    const metadataRequests = [];
    // Records the SDK's requests to Hydra: the metadata it read and the
    // token requests' bodies (the client secret travels in the
    // Authorization header, not recorded).
    const loggedFetch = async (input, init) => {
        const url = String(input instanceof Request ? input.url : input);
        if (url.startsWith(issuer + '/.well-known/')) metadataRequests.push(url);
        if (url === issuer + '/oauth2/token') tokenRequests.push({ url, body: String(init?.body ?? '') });
        return fetch(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(TIMEOUT_MS) });
    };
    const newTransport = () => new StreamableHTTPClientTransport(new URL(serverUrl), { authProvider: provider, fetch: loggedFetch });
    const client = new Client({ name: 'mcpauth-hydra-interop', version: '1.0.0' });
    try {
        await client.connect(newTransport());
    } catch (err) {
        if (!isUnauthorized(err)) throw err;
        await client.connect(newTransport());
    }
    const tools = await client.listTools();
    const echo = await client.callTool({ name: 'echo', arguments: { message: 'hello' } });
    const headers = await client.callTool({ name: 'headers', arguments: {} });
    await client.close();
    const tok = claims(provider.tokens().access_token);
    const report = {
        tools: tools.tools.map(t => t.name).sort(),
        echo: text(echo),
        headers: text(headers),
        tokenAud: [tok.aud].flat(),
        tokenScp: [tok.scp].flat(),
        metadataRequests,
        tokenRequests
    };
    process.stdout.write(JSON.stringify(report) + '\n');
}

main().then(
    () => process.exit(0),
    err => {
        process.stderr.write(`hydra interop: ${err?.stack ?? err}${err?.cause ? `\ncause: ${err.cause?.stack ?? err.cause}` : ''}\n`);
        process.exit(1);
    }
);
