// Runs panva oidc-provider (pinned in package.json) as the upstream OpenID
// provider of the broker tests, on 127.0.0.1 with a port the system picks.
//
//   node oidc.mjs
//
// It prints its issuer URL on the first line of stdout, then reads one line
// from stdin: "<redirect_uri> <client_secret>", the callback of the mcpauth
// authorization server under test and the secret it authenticates with.
// It registers that one confidential client (client_id "mcpauth",
// client_secret_basic, code flow, PKCE required), prints "ready" and serves
// until killed. Logins use oidc-provider's development interactions: any
// login name with any password; the account's sub is the login name, its
// email <login>@example.com (verified), its groups ["mcp-users"]. ID tokens
// carry the email, profile and groups claims.
//
// With OIDC_DEVICE=1 in the environment it also offers its own device
// flow (RFC 8628) with resource indicators, for the tests of mcpauth's
// client against it: a second, public client "device-client" (the
// device_code grant), and for any resource an RFC 9068 JWT access
// token with the scopes mcp:tools and mcp:admin and "aud" the resource.
// Without it nothing changes for the broker tests.

import http from 'node:http';
import readline from 'node:readline';
import Provider from 'oidc-provider';

async function main() {
    const server = http.createServer();
    await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
    const issuer = `http://127.0.0.1:${server.address().port}`;
    process.stdout.write(`${issuer}\n`);

    const rl = readline.createInterface({ input: process.stdin });
    const line = await new Promise((resolve) => rl.once('line', resolve));
    rl.close();
    const [redirectURI, secret] = line.trim().split(/\s+/);
    if (!redirectURI || !secret) {
        throw new Error('expected "<redirect_uri> <client_secret>" on stdin');
    }

    const device = process.env.OIDC_DEVICE === '1';
    const clients = [{
        client_id: 'mcpauth',
        client_secret: secret,
        redirect_uris: [redirectURI],
        grant_types: ['authorization_code'],
        response_types: ['code'],
        token_endpoint_auth_method: 'client_secret_basic',
    }];
    const features = { devInteractions: { enabled: true } };
    if (device) {
        clients.push({
            client_id: 'device-client',
            grant_types: ['urn:ietf:params:oauth:grant-type:device_code'],
            response_types: [],
            redirect_uris: [],
            token_endpoint_auth_method: 'none',
        });
        features.deviceFlow = { enabled: true };
        features.resourceIndicators = {
            enabled: true,
            defaultResource: () => undefined,
            useGrantedResource: () => true,
            getResourceServerInfo: (_ctx, resourceIndicator) => ({
                scope: 'mcp:tools mcp:admin',
                audience: resourceIndicator,
                accessTokenFormat: 'jwt',
                accessTokenTTL: 600,
            }),
        };
    }

    const provider = new Provider(issuer, {
        clients,
        pkce: { required: () => true },
        claims: {
            openid: ['sub'],
            email: ['email', 'email_verified'],
            profile: ['name'],
            groups: ['groups'],
        },
        scopes: ['openid', 'email', 'profile', 'groups'],
        conformIdTokenClaims: false,
        cookies: { keys: ['oidc-interop-cookie-key-for-tests'] },
        features,
        findAccount: (_ctx, sub) => ({
            accountId: sub,
            claims: () => ({
                sub, email: `${sub}@example.com`, email_verified: true, name: sub, groups: ['mcp-users'],
            }),
        }),
    });
    server.on('request', provider.callback());
    process.stdout.write('ready\n');
}

main().catch((err) => {
    process.stderr.write(`oidc.mjs: ${err.stack || err}\n`);
    process.exit(1);
});
