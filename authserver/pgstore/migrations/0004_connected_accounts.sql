-- Third-party accounts users connected (Config.Connect) and the tickets of
-- connect flows in progress. An account names the sealed record of its
-- tokens in upstream_tokens: no token is stored here. A ticket is keyed by
-- the hash of its random value and is used once.

CREATE TABLE connected_accounts (
	subject    text NOT NULL,
	provider   text NOT NULL,
	data       jsonb NOT NULL,
	grant_id   text NOT NULL,
	tokens     text NOT NULL,
	expires_at timestamptz NOT NULL,
	PRIMARY KEY (subject, provider)
);
CREATE INDEX connected_accounts_grant_id ON connected_accounts (grant_id);
CREATE INDEX connected_accounts_expires_at ON connected_accounts (expires_at);

CREATE TABLE connect_tickets (
	id         text PRIMARY KEY,
	data       jsonb NOT NULL,
	expires_at timestamptz NOT NULL
);
CREATE INDEX connect_tickets_expires_at ON connect_tickets (expires_at);
