-- The upstream provider's tokens of each login (Config.TokenVault), sealed
-- by the server (AES-256-GCM) before they reach the database: "sealed" is
-- never plaintext. "version" makes concurrent refreshes compare-and-swap.

CREATE TABLE upstream_tokens (
	id         text PRIMARY KEY,
	grant_id   text,
	sealed     bytea NOT NULL,
	version    bigint NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE INDEX upstream_tokens_expires_at ON upstream_tokens (expires_at);
CREATE INDEX upstream_tokens_grant_id ON upstream_tokens (grant_id);
