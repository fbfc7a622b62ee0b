// Drives the official MCP TypeScript SDK client (@modelcontextprotocol/client,
// pinned in package.json) with its own DPoP support (RFC 9449, SEP-1932)
// against `mcpauth protect --dpop required` in front of an MCP server, with
// `mcpauth authserver --consent auto` as the authorization server:
//
//   node dpop.mjs <mcp-url> <alg>        (alg: ES256, EdDSA, …)
//
// First run: the provider implements dpop(), so the SDK signs a proof into
// the token request (retrying a use_dpop_nonce answer of the token
// endpoint with the nonce it was given), gets a DPoP-bound token, and
// presents it to the resource as `Authorization: DPoP` with a fresh proof per
// request (retrying a resource use_dpop_nonce challenge). It lists tools and
// calls echo. Second run: a new client and transport with the saved token
// and the same key call echo again without authorizing again; then the
// same token is presented as Bearer, and with a proof signed by another
// key, outside the SDK: both must be refused; and with a proof of the
// right key without a nonce (refused only when protect requires nonces). It prints one JSON object
// describing what happened (no token, no proof), and exits non-zero on any
// failure.

import { Client, DpopSession, StreamableHTTPClientTransport, generateDpopKeyPair } from '@modelcontextprotocol/client';

import { HeadlessProvider, finish, isUnauthorized, recordingFetch, text, TIMEOUT_MS } from './headless.mjs';

/** A HeadlessProvider that binds its tokens to one DPoP key for its whole life. */
class DPoPProvider extends HeadlessProvider {
    constructor(session) {
        super('mcpauth interop (TypeScript SDK, DPoP)');
        this.session = session;
    }
    dpop() {
        return this.session;
    }
}

/** The claims of a compact JWS, without checking anything. */
function claimsOf(jwt) {
    return JSON.parse(Buffer.from(jwt.split('.')[1], 'base64url').toString());
}

/** One raw MCP request to serverUrl with the given Authorization and DPoP headers. */
async function probe(serverUrl, authorization, proof) {
    const headers = {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        'Mcp-Protocol-Version': '2025-06-18',
        Authorization: authorization
    };
    if (proof) headers.DPoP = proof;
    const res = await fetch(serverUrl, {
        method: 'POST',
        headers,
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }),
        signal: AbortSignal.timeout(TIMEOUT_MS)
    });
    await res.text();
    return { status: res.status, wwwAuthenticate: res.headers.get('www-authenticate') ?? undefined, dpopNonce: res.headers.has('dpop-nonce') };
}

async function callEcho(serverUrl, provider, requests, message) {
    const newTransport = () => new StreamableHTTPClientTransport(serverUrl, { authProvider: provider, fetch: recordingFetch(requests) });
    const client = new Client({ name: 'mcpauth-interop-dpop', version: '1.0.0' });
    let transport = newTransport();
    try {
        await client.connect(transport);
    } catch (err) {
        if (!isUnauthorized(err)) throw err;
        await finish(provider, transport);
        transport = newTransport();
        await client.connect(transport);
    }
    const tools = await client.listTools();
    const echo = await client.callTool({ name: 'echo', arguments: { message } });
    await client.close();
    return { tools: tools.tools.map(t => t.name).sort(), echo: text(echo) };
}

async function main() {
    const serverUrl = new URL(process.argv[2]);
    const alg = process.argv[3] ?? 'ES256';
    const keyPair = await generateDpopKeyPair({ alg });
    const session = await DpopSession.create({ keyPair });
    const provider = new DPoPProvider(session);

    const first = [];
    const run1 = await callEcho(serverUrl, provider, first, 'first run');
    const tokens = provider.savedTokens;
    if (!tokens?.access_token) {
        throw new Error('no access token after the first run');
    }
    const claims = claimsOf(tokens.access_token);

    // Second run: the saved token and the same key, a new client.
    const second = [];
    const run2 = await callEcho(serverUrl, provider, second, 'second run');

    // The same token outside the SDK: as Bearer, and with another key's proof.
    const asBearer = await probe(serverUrl, `Bearer ${tokens.access_token}`);
    const thief = await DpopSession.create({ alg });
    const thiefProof = await thief.buildProof({ htm: 'POST', htu: serverUrl, accessToken: tokens.access_token, nonce: session.nonceFor(serverUrl) });
    const otherKey = await probe(serverUrl, `DPoP ${tokens.access_token}`, thiefProof);
    // The right key, but a session that never saw a nonce: refused with
    // use_dpop_nonce when protect issues nonces, accepted otherwise.
    const forgetful = await DpopSession.create({ keyPair });
    const noNonceProof = await forgetful.buildProof({ htm: 'POST', htu: serverUrl, accessToken: tokens.access_token });
    const withoutNonce = await probe(serverUrl, `DPoP ${tokens.access_token}`, noNonceProof);

    const tokenEndpoint = provider.discovery?.authorizationServerMetadata?.token_endpoint;
    const summarize = list => ({
        tokenRequests: list.filter(r => r.url === tokenEndpoint).map(r => ({ status: r.status, dpopProof: r.dpopProof, error: r.error, dpopNonce: r.dpopNonce })),
        resourceRequests: list
            .filter(r => r.url === serverUrl.href)
            .map(r => ({ method: r.method, status: r.status, scheme: r.scheme, dpopProof: r.dpopProof, wwwAuthenticate: r.wwwAuthenticate, dpopNonce: r.dpopNonce }))
    });
    const report = {
        alg: session.alg,
        thumbprint: session.thumbprint,
        tokenType: tokens.token_type,
        cnfJkt: claims.cnf?.jkt,
        audience: claims.aud,
        metadataAlgs: provider.discovery?.authorizationServerMetadata?.dpop_signing_alg_values_supported,
        authorizations: provider.authorizationScopes.length,
        first: { ...run1, ...summarize(first) },
        second: { ...run2, ...summarize(second) },
        asBearer,
        otherKey,
        withoutNonce
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
