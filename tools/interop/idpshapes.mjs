// Runs panva oidc-provider (pinned in package.json) as several identity
// providers at once, each issuing the access token shapes that Microsoft
// Entra ID (v1.0 and v2.0), Okta, Auth0, Keycloak and Amazon Cognito
// document, for the preset matrix of the idpshapes e2e test.
//
//   node idpshapes.mjs [port]
//
// It listens on 127.0.0.1:port (0 or none: a port the system picks), prints
// the base URL on the first line of stdout once every issuer serves, and
// serves until killed. Four oidc-provider instances, each with its own RSA
// key, are mounted under the base URL:
//
//   /<tenant A>/v2.0   Entra v2.0 issuer of tenant A  (template /{tid}/v2.0)
//   /<tenant B>/v2.0   Entra v2.0 issuer of tenant B, another tenant
//   /v1/<tenant A>     Entra v1.0 issuer of tenant A  (template /v1/{tid})
//   /idp               the issuer of the other providers' presets
//
// Every instance has every client below (client_secret_basic, secret
// "secret-<client_id>", grant client_credentials, scope "mcp:tools
// files:read"), so each shape can be obtained from each issuer: a preset is
// tried with its neighbours' shapes as its own issuer signs them. The token
// request's resource (RFC 8707) is the MCP server; the token is a JWT whose
// header and payload formats.customizers.jwt rewrites per client:
//
//   rfc9068 (oidc-provider's own), entra-v2, entra-v2-app, entra-v1, okta,
//   auth0, keycloak-mapper, keycloak-nomapper, cognito  access tokens
//   keycloak-nomapper-other, cognito-other             the same shapes,
//                                                     another client
//   entra-v2-other-iss, entra-v2-other-tid             Entra v2.0 naming the
//                                                     other tenant in iss
//                                                     and tid, or in tid only
//   entra-v2-id, okta-id, auth0-id, keycloak-id, cognito-id
//                                                     ID token shapes
//
// oidc-provider issues ID tokens only after an interactive login, so the
// "-id" clients get the provider's ID token shape (aud the client, no
// client claim, Keycloak's typ "ID", Cognito's token_use "id") signed with
// the issuer's own key through the same customizer: what a resource server
// sees when a client sends an ID token as an access token. oidc-provider's
// own ID tokens come from the client "web" (client_secret_basic, secret
// "secret-web", authorization code with PKCE, redirect URI
// http://127.0.0.1:1/callback, where nothing listens) after a login through
// the development interactions (any login name, any password).
//
// A shape without "aud" (Keycloak without an audience mapper, Cognito) keeps
// the member hidden from the serialisation: oidc-provider refuses to sign a
// JWT access token without an audience.

import crypto from 'node:crypto';
import http from 'node:http';
import Provider from 'oidc-provider';

const TENANT_A = '72f988bf-86f1-41af-91ab-2d7cd011db47';
const TENANT_B = 'fa15d692-e9c7-4460-a743-29f2956fd429';
// The Entra API's application (client) ID: its v2.0 tokens' aud; v1.0
// tokens carry its App ID URI api://<id>.
const ENTRA_API = '6e74172b-be56-4843-9ff4-e66a39bb12e3';

const SCOPES = 'mcp:tools files:read';

const words = (s) => (s ? s.split(' ') : []);

// hideAudience removes "aud" from the token's JSON while leaving a value
// oidc-provider's audience check sees.
function hideAudience(p) {
    Object.defineProperty(p, 'aud', { value: 'hidden', enumerable: false, writable: true, configurable: true });
}

// shapes rewrite oidc-provider's RFC 9068 token ({header, payload} with
// iss, sub, aud = the resource, client_id, scope, jti, iat, exp) into each
// provider's documented shape. tid is the mount's tenant.
const shapes = {
    // RFC 9068 as oidc-provider issues it: typ at+jwt, client_id, scope.
    rfc9068: () => {},
    // Entra v2.0, delegated: typ JWT, aud the API's client ID, scp a
    // string, azp the client, ver 2.0, tid.
    'entra-v2': (h, p, c, tid) => {
        h.typ = 'JWT';
        Object.assign(p, { aud: ENTRA_API, azp: c, azpacr: '1', scp: p.scope, ver: '2.0', tid, oid: crypto.randomUUID() });
        delete p.scope; delete p.client_id;
    },
    // Entra v2.0, app-only: app roles in "roles" (an array), no scp.
    'entra-v2-app': (h, p, c, tid) => {
        h.typ = 'JWT';
        Object.assign(p, { aud: ENTRA_API, azp: c, azpacr: '1', idtyp: 'app', roles: words(p.scope), ver: '2.0', tid });
        delete p.scope; delete p.client_id;
    },
    // Entra v1.0: aud the App ID URI, the client in appid, ver 1.0.
    'entra-v1': (h, p, c, tid) => {
        h.typ = 'JWT';
        Object.assign(p, { aud: `api://${ENTRA_API}`, appid: c, appidacr: '1', scp: p.scope, ver: '1.0', tid });
        delete p.scope; delete p.client_id;
    },
    // Okta custom authorization server: no typ header, scp an array, cid
    // the client, uid, ver 1 (a number).
    okta: (h, p, c) => {
        h.typ = undefined;
        Object.assign(p, { ver: 1, cid: c, uid: '00ujmkLgagxeRrAg20g3', scp: words(p.scope) });
        delete p.scope; delete p.client_id;
    },
    // Auth0: typ JWT, aud the API identifier and the userinfo URL, azp the
    // client, scope a string, RBAC permissions an array.
    auth0: (h, p, c) => {
        h.typ = 'JWT';
        Object.assign(p, { aud: [p.aud, `${p.iss}/userinfo`], azp: c, permissions: words(p.scope) });
        delete p.client_id;
    },
    // Keycloak 26 with an audience mapper naming the MCP server: typ JWT,
    // azp, scope a string, the claim typ Bearer, realm roles.
    'keycloak-mapper': (h, p, c) => {
        h.typ = 'JWT';
        Object.assign(p, { typ: 'Bearer', azp: c, realm_access: { roles: ['default-roles-mcp'] } });
        delete p.client_id;
    },
    // Keycloak 26 without an audience mapper: no aud at all.
    'keycloak-nomapper': (h, p, c) => {
        shapes['keycloak-mapper'](h, p, c);
        hideAudience(p);
    },
    // Cognito: no typ header, no aud, client_id, token_use access, scope.
    cognito: (h, p) => {
        h.typ = undefined;
        Object.assign(p, { token_use: 'access', version: 2, username: 'alice', 'cognito:groups': ['admins'] });
        hideAudience(p);
    },
    // Entra v2.0 claiming the other tenant: its issuer and tid, signed
    // with this tenant's key; or this issuer with the other tenant's tid.
    'entra-v2-other-iss': (h, p, c, tid) => {
        shapes['entra-v2'](h, p, c, tid);
        const other = tid === TENANT_A ? TENANT_B : TENANT_A;
        Object.assign(p, { iss: p.iss.replace(tid, other), tid: other });
    },
    'entra-v2-other-tid': (h, p, c, tid) => {
        shapes['entra-v2'](h, p, c, tid);
        p.tid = tid === TENANT_A ? TENANT_B : TENANT_A;
    },
    'keycloak-nomapper-other': (h, p, c) => shapes['keycloak-nomapper'](h, p, c),
    'cognito-other': (h, p, c) => shapes.cognito(h, p, c),
    // ID token shapes: aud the client, no client claim, no scopes.
    'entra-v2-id': (h, p, c, tid) => {
        h.typ = 'JWT';
        // An app registered as both client and API: its ID tokens name the
        // API's client ID.
        Object.assign(p, { aud: ENTRA_API, ver: '2.0', tid, nonce: 'n-0S6_WzA2Mj', roles: words(p.scope) });
        delete p.scope; delete p.client_id;
    },
    'okta-id': (h, p, c) => {
        h.typ = undefined;
        Object.assign(p, { ver: 1, aud: c, amr: ['pwd'] });
        delete p.scope; delete p.client_id;
    },
    'auth0-id': (h, p, c) => {
        h.typ = 'JWT';
        Object.assign(p, { aud: c, nonce: 'n-0S6_WzA2Mj' });
        delete p.scope; delete p.client_id;
    },
    'keycloak-id': (h, p, c) => {
        h.typ = 'JWT';
        Object.assign(p, { aud: c, typ: 'ID', azp: c, nonce: 'n-0S6_WzA2Mj' });
        delete p.scope; delete p.client_id;
    },
    'cognito-id': (h, p, c) => {
        h.typ = undefined;
        Object.assign(p, { aud: c, token_use: 'id', email: 'alice@example.com' });
        delete p.scope; delete p.client_id;
    },
};

function newProvider(issuer, tid) {
    const { privateKey } = crypto.generateKeyPairSync('rsa', { modulusLength: 2048 });
    const jwk = { ...privateKey.export({ format: 'jwk' }), use: 'sig', alg: 'RS256', kid: crypto.randomUUID() };
    return new Provider(issuer, {
        jwks: { keys: [jwk] },
        clients: [...Object.keys(shapes).map((id) => ({
            client_id: id,
            client_secret: `secret-${id}`,
            grant_types: ['client_credentials'],
            response_types: [],
            redirect_uris: [],
            token_endpoint_auth_method: 'client_secret_basic',
            scope: SCOPES,
        })), {
            client_id: 'web',
            client_secret: 'secret-web',
            grant_types: ['authorization_code'],
            response_types: ['code'],
            redirect_uris: ['http://127.0.0.1:1/callback'],
            token_endpoint_auth_method: 'client_secret_basic',
        }],
        scopes: ['openid', ...words(SCOPES)],
        cookies: { keys: ['idpshapes-cookie-key-for-tests'] },
        features: {
            devInteractions: { enabled: true },
            clientCredentials: { enabled: true },
            resourceIndicators: {
                enabled: true,
                defaultResource: () => undefined,
                useGrantedResource: () => true,
                getResourceServerInfo: () => ({
                    scope: SCOPES,
                    accessTokenTTL: 600,
                    accessTokenFormat: 'jwt',
                    jwt: { sign: { alg: 'RS256' } },
                }),
            },
        },
        formats: {
            customizers: {
                jwt: (_ctx, token, jwt) => {
                    const shape = shapes[token.clientId];
                    if (!shape) {
                        throw new Error(`no shape for client ${token.clientId}`);
                    }
                    jwt.header = {};
                    shape(jwt.header, jwt.payload, token.clientId, tid);
                },
            },
        },
    });
}

async function main() {
    const port = Number(process.argv[2] || 0);
    const server = http.createServer();
    await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${server.address().port}`;
    const mounts = [
        [`/${TENANT_A}/v2.0`, TENANT_A],
        [`/${TENANT_B}/v2.0`, TENANT_B],
        [`/v1/${TENANT_A}`, TENANT_A],
        ['/idp', TENANT_A],
    ].map(([path, tid]) => ({ path, handle: newProvider(base + path, tid).callback() }));
    server.on('request', (req, res) => {
        const m = mounts.find(({ path }) => req.url === path || req.url.startsWith(`${path}/`));
        if (!m) {
            res.writeHead(404).end();
            return;
        }
        // Mounted as express would: oidc-provider finds its mount path
        // from originalUrl.
        req.originalUrl = req.url;
        req.url = req.url.slice(m.path.length) || '/';
        m.handle(req, res);
    });
    process.stdout.write(`${base}\n`);
}

main().catch((err) => {
    process.stderr.write(`idpshapes.mjs: ${err.stack || err}\n`);
    process.exit(1);
});
