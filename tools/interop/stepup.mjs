// Drives the official MCP TypeScript SDK client (@modelcontextprotocol/client,
// pinned in package.json) against an MCP server protected by mcpauth whose
// authorization server approves automatically (`mcpauth demo --no-client`):
//
//   node stepup.mjs <mcp-url>
//
// The SDK does discovery, Dynamic Client Registration (with the scope of the
// first challenge, as the SDK does), PKCE and the code exchange itself. The
// provider below stands in for the browser: it fetches the authorization URL
// without following the final redirect and hands the callback parameters to
// transport.finishAuth. After listing tools and calling echo (mcp:tools), it
// calls admin_echo (mcp:admin): the server answers 403 insufficient_scope and
// the SDK's own step-up path re-authorizes the same registered client for the
// wider scope. It prints one JSON object describing what happened, and exits
// non-zero on any failure.

import { Client, StreamableHTTPClientTransport, UnauthorizedError } from '@modelcontextprotocol/client';

const REDIRECT_URL = 'http://127.0.0.1/callback'; // never visited
const TIMEOUT_MS = 30_000;

/** An OAuthClientProvider for an authorization server that approves without a user. */
class HeadlessProvider {
    constructor() {
        this.authorizationScopes = [];
        this.callback = undefined;
    }
    get redirectUrl() {
        return REDIRECT_URL;
    }
    get clientMetadata() {
        return {
            client_name: 'mcpauth interop (TypeScript SDK)',
            redirect_uris: [REDIRECT_URL],
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            token_endpoint_auth_method: 'none'
        };
    }
    clientInformation() {
        return this.info;
    }
    saveClientInformation(info) {
        this.info = info;
    }
    tokens() {
        return this.savedTokens;
    }
    saveTokens(tokens) {
        this.savedTokens = tokens;
    }
    saveCodeVerifier(verifier) {
        this.verifier = verifier;
    }
    codeVerifier() {
        return this.verifier;
    }
    discoveryState() {
        return this.discovery;
    }
    saveDiscoveryState(state) {
        this.discovery = state;
    }
    /** The user agent: one GET, and the redirect to the client captured, not followed. */
    async redirectToAuthorization(authorizationUrl) {
        this.authorizationScopes.push(authorizationUrl.searchParams.get('scope'));
        const res = await fetch(authorizationUrl, { redirect: 'manual', signal: AbortSignal.timeout(TIMEOUT_MS) });
        const location = res.headers.get('location');
        if (!location) {
            throw new Error(`authorization endpoint answered ${res.status} without a redirect: ${(await res.text()).slice(0, 500)}`);
        }
        const callback = new URL(location, authorizationUrl);
        if (callback.origin + callback.pathname !== REDIRECT_URL) {
            throw new Error(`authorization endpoint redirected elsewhere than the redirect URI: ${callback.origin}${callback.pathname}`);
        }
        this.callback = callback.searchParams;
    }
}

function isUnauthorized(err) {
    return err instanceof UnauthorizedError || err?.name === 'UnauthorizedError';
}

function text(result) {
    return result.content.filter(c => c.type === 'text').map(c => c.text).join('');
}

async function main() {
    const serverUrl = new URL(process.argv[2]);
    const provider = new HeadlessProvider();
    const requests = [];
    // Every request the SDK makes goes through here, so the report shows
    // the registrations and the insufficient_scope answers it got.
    const loggedFetch = async (input, init) => {
        const res = await fetch(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(TIMEOUT_MS) });
        requests.push({
            method: init?.method ?? 'GET',
            url: String(input instanceof Request ? input.url : input),
            status: res.status,
            wwwAuthenticate: res.headers.get('www-authenticate') ?? undefined
        });
        return res;
    };
    const newTransport = () => new StreamableHTTPClientTransport(serverUrl, { authProvider: provider, fetch: loggedFetch });

    // finishAuth completes the authorization the SDK started, as an app's
    // redirect handler would; an error redirect is reported as such.
    const finish = async transport => {
        const params = provider.callback;
        provider.callback = undefined;
        if (!params) {
            throw new Error('the SDK asked for authorization but no callback was captured');
        }
        if (params.get('error')) {
            throw new Error(`authorization refused: ${params.get('error')}: ${params.get('error_description') ?? ''}`);
        }
        await transport.finishAuth(params);
    };
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
