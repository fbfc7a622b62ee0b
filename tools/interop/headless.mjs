// What the interop scripts share: an OAuthClientProvider for an
// authorization server that approves without a user (the browser replaced
// by one GET whose redirect is captured, not followed), the completion of
// the authorization the SDK started, and a fetch that records every
// request the SDK makes.

import { UnauthorizedError } from '@modelcontextprotocol/client';

export const REDIRECT_URL = 'http://127.0.0.1/callback'; // never visited
export const TIMEOUT_MS = 30_000;

/** An OAuthClientProvider for an authorization server that approves without a user. */
export class HeadlessProvider {
    constructor(name = 'mcpauth interop (TypeScript SDK)') {
        this.name = name;
        this.authorizationScopes = [];
        this.callback = undefined;
    }
    get redirectUrl() {
        return REDIRECT_URL;
    }
    get clientMetadata() {
        return {
            client_name: this.name,
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

export function isUnauthorized(err) {
    return err instanceof UnauthorizedError || err?.name === 'UnauthorizedError';
}

export function text(result) {
    return result.content.filter(c => c.type === 'text').map(c => c.text).join('');
}

/**
 * finishAuth completes the authorization the SDK started, as an app's
 * redirect handler would; an error redirect is reported as such.
 */
export async function finish(provider, transport) {
    const params = provider.callback;
    provider.callback = undefined;
    if (!params) {
        throw new Error('the SDK asked for authorization but no callback was captured');
    }
    if (params.get('error')) {
        throw new Error(`authorization refused: ${params.get('error')}: ${params.get('error_description') ?? ''}`);
    }
    await transport.finishAuth(params);
}

/**
 * A fetch that records, for each request, its method, URL, status, the
 * scheme of its Authorization header, whether it carried a DPoP proof, and
 * the response's WWW-Authenticate and whether it carried a DPoP-Nonce.
 * Never the credentials themselves.
 */
export function recordingFetch(requests) {
    return async (input, init) => {
        const res = await fetch(input, { ...init, signal: init?.signal ?? AbortSignal.timeout(TIMEOUT_MS) });
        const headers = new Headers(init?.headers);
        let body;
        if (res.status === 400) {
            body = await res.clone().json().catch(() => undefined);
        }
        requests.push({
            method: init?.method ?? 'GET',
            url: String(input instanceof Request ? input.url : input),
            status: res.status,
            scheme: headers.get('authorization')?.split(' ')[0],
            dpopProof: headers.has('dpop'),
            error: body?.error,
            wwwAuthenticate: res.headers.get('www-authenticate') ?? undefined,
            dpopNonce: res.headers.has('dpop-nonce')
        });
        return res;
    };
}
