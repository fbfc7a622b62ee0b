// Runs panva oidc-provider (pinned in package.json) as one of the
// authorization servers `mcpauth-load -authservers` measures beside mcpauth
// authserver, on 127.0.0.1 with a port the system picks, its state in
// oidc-provider's in-memory adapter.
//
//   node asload.mjs
//
// It prints "listening on <issuer>" on stdout when it serves. Its clients:
//
//   - "cc", confidential (client_secret_basic, secret "cc-secret"), the
//     client_credentials grant, scope mcp:read;
//   - "app", public (PKCE required), the authorization_code and
//     refresh_token grants, redirect URI http://127.0.0.1:1/cb; its refresh
//     tokens rotate on every use (oidc-provider's default for public
//     clients), issued without offline_access.
//
// Every access token is an RFC 9068 JWT signed ES256 (like mcpauth's) for
// the resource http://127.0.0.1:1/mcp, the default resource indicator, with
// the scope mcp:read. Login and consent are one HTML form at
// /interaction/<uid> whose POST signs the user "alice" in and grants what
// the client asked for (provider.interactionFinished), so that a headless
// HTTP client with cookies completes a login as a browser would.

import crypto from 'node:crypto';
import http from 'node:http';
import Provider from 'oidc-provider';
import MemoryAdapter from 'oidc-provider/lib/adapters/memory_adapter.js';
import LRU from 'oidc-provider/lib/helpers/lru.js';

const RESOURCE = 'http://127.0.0.1:1/mcp';
const SCOPE = 'mcp:read';

function key(type, options, alg, kid) {
    const { privateKey } = crypto.generateKeyPairSync(type, options);
    return { ...privateKey.export({ format: 'jwk' }), alg, use: 'sig', kid };
}

async function main() {
    // oidc-provider's own in-memory adapter keeps 1000 entries, fewer than
    // a load run makes: a worker's refresh token would be evicted and its
    // next refresh refused. The same adapter with room for a million.
    const store = new LRU({ maxSize: 1000000 });
    const server = http.createServer();
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${server.address().port}`;
    const provider = new Provider(issuer, {
        adapter: (model) => new MemoryAdapter(model, store),
        clients: [{
            client_id: 'cc',
            client_secret: 'cc-secret',
            grant_types: ['client_credentials'],
            response_types: [],
            redirect_uris: [],
            token_endpoint_auth_method: 'client_secret_basic',
            scope: SCOPE,
        }, {
            client_id: 'app',
            application_type: 'native',
            grant_types: ['authorization_code', 'refresh_token'],
            response_types: ['code'],
            redirect_uris: ['http://127.0.0.1:1/cb'],
            token_endpoint_auth_method: 'none',
            id_token_signed_response_alg: 'ES256',
        }],
        // ES256 for the access tokens; RS256 is there because every
        // provider must hold one (ID tokens' default), never used here.
        jwks: {
            keys: [key('ec', { namedCurve: 'P-256' }, 'ES256', 'es256'),
                key('rsa', { modulusLength: 2048 }, 'RS256', 'rs256')],
        },
        pkce: { required: () => true },
        scopes: ['openid', SCOPE],
        cookies: { keys: ['oidc-asload-cookie-key-for-tests'] },
        // Every lifetime set, so that oidc-provider prints no notice about
        // its defaults on stdout.
        ttl: {
            AccessToken: 900, AuthorizationCode: 60, ClientCredentials: 900, Grant: 86400,
            IdToken: 900, Interaction: 600, RefreshToken: 86400, Session: 86400,
        },
        issueRefreshToken: async (_ctx, client) => client.grantTypeAllowed('refresh_token'),
        features: {
            devInteractions: { enabled: false },
            clientCredentials: { enabled: true },
            resourceIndicators: {
                enabled: true,
                defaultResource: () => RESOURCE,
                useGrantedResource: () => true,
                getResourceServerInfo: () => ({
                    scope: SCOPE,
                    audience: RESOURCE,
                    accessTokenFormat: 'jwt',
                    accessTokenTTL: 900,
                    jwt: { sign: { alg: 'ES256' } },
                }),
            },
        },
        interactions: { url: (_ctx, interaction) => `/interaction/${interaction.uid}` },
        findAccount: (_ctx, sub) => ({ accountId: sub, claims: () => ({ sub }) }),
    });
    // Refused requests are logged on stderr, which mcpauth-load shows when
    // an answer is wrong.
    for (const event of ['grant.error', 'server_error', 'authorization.error']) {
        provider.on(event, (_ctx, err) => process.stderr.write(`${event}: ${err.message} ${err.error_detail || ''}\n`));
    }
    const callback = provider.callback();
    server.on('request', (req, res) => {
        const m = /^\/interaction\/([\w-]+)$/.exec(req.url);
        if (!m) {
            callback(req, res);
            return;
        }
        interaction(provider, req, res, m[1]).catch((err) => {
            res.statusCode = 500;
            res.end(String(err));
        });
    });
    process.stdout.write(`listening on ${issuer}\n`);
}

// interaction serves the login and consent form (GET) and finishes the
// interaction for "alice" with a grant of what was asked (POST).
async function interaction(provider, req, res, uid) {
    const details = await provider.interactionDetails(req, res);
    if (details.uid !== uid) {
        res.statusCode = 400;
        res.end('interaction mismatch');
        return;
    }
    if (req.method === 'GET') {
        res.setHeader('Content-Type', 'text/html; charset=utf-8');
        res.end(`<!doctype html><form method="post" action="/interaction/${uid}">`
            + '<button type="submit">Sign in and approve</button></form>');
        return;
    }
    if (req.method !== 'POST') {
        res.statusCode = 405;
        res.end();
        return;
    }
    for await (const _ of req) { /* the form has no fields */ }
    const { params } = details;
    const grant = new provider.Grant({ accountId: 'alice', clientId: params.client_id });
    const scopes = String(params.scope || '').split(' ').filter(Boolean);
    // The provider's own scopes (mcp:read is one, for the token endpoint's
    // scope checks) and the resource's.
    grant.addOIDCScope(scopes.join(' '));
    grant.addResourceScope(RESOURCE, scopes.filter((s) => s !== 'openid').join(' '));
    const grantId = await grant.save();
    await provider.interactionFinished(req, res, { login: { accountId: 'alice' }, consent: { grantId } },
        { mergeWithLastSubmission: false });
}

main().catch((err) => {
    process.stderr.write(`asload.mjs: ${err.stack || err}\n`);
    process.exit(1);
});
