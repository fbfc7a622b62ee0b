-- The authorization server's state. Records are JSON in a "data" column,
-- beside the columns that queries match on or update atomically.

CREATE TABLE clients (
	id         text PRIMARY KEY,
	data       jsonb NOT NULL
);

CREATE TABLE codes (
	key         text PRIMARY KEY,
	data        jsonb NOT NULL,
	redeemed_by text,
	expires_at  timestamptz NOT NULL
);
CREATE INDEX codes_expires_at ON codes (expires_at);

CREATE TABLE grants (
	id         text PRIMARY KEY,
	data       jsonb NOT NULL,
	revoked    boolean NOT NULL DEFAULT false,
	expires_at timestamptz NOT NULL
);
CREATE INDEX grants_expires_at ON grants (expires_at);

CREATE TABLE refresh_tokens (
	key        text PRIMARY KEY,
	grant_id   text NOT NULL,
	data       jsonb NOT NULL,
	rotated    boolean NOT NULL DEFAULT false,
	expires_at timestamptz NOT NULL
);
CREATE INDEX refresh_tokens_expires_at ON refresh_tokens (expires_at);

CREATE TABLE consents (
	subject    text NOT NULL,
	client_id  text NOT NULL,
	data       jsonb NOT NULL,
	expires_at timestamptz NOT NULL,
	PRIMARY KEY (subject, client_id)
);
CREATE INDEX consents_expires_at ON consents (expires_at);

-- The private key is sealed (AES-256-GCM); the rest is the schedule.
CREATE TABLE signing_keys (
	kid        text PRIMARY KEY,
	alg        text NOT NULL,
	sealed_jwk bytea NOT NULL,
	created_at timestamptz NOT NULL,
	active_at  timestamptz NOT NULL,
	retire_at  timestamptz
);

CREATE TABLE revoked_access_tokens (
	jti        text PRIMARY KEY,
	expires_at timestamptz NOT NULL
);
CREATE INDEX revoked_access_tokens_expires_at ON revoked_access_tokens (expires_at);

CREATE TABLE pending_authorizations (
	id         text PRIMARY KEY,
	data       jsonb NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE INDEX pending_authorizations_expires_at ON pending_authorizations (expires_at);
