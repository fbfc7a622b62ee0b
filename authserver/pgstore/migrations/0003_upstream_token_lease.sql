-- The refresh lease of each upstream token record (Config.TokenVault):
-- the replica whose refresh holds it ("lease_owner", random per refresh)
-- and until when, by the server's clock ("lease_until"). A replica takes
-- it with the record's versioned UPDATE, so of replicas taking it at the
-- same moment one wins, and only that one refreshes at the provider.

ALTER TABLE upstream_tokens
	ADD COLUMN lease_owner text,
	ADD COLUMN lease_until timestamptz;
