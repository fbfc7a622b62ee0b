-- The codes of the device authorization grant (RFC 8628, Config.Device):
-- "key" is the SHA-256 of the device code, "user_code_key" that of the
-- user code; neither code is stored. Rows are changed under a row lock
-- (SELECT ... FOR UPDATE), so a poll, the user's answer and the single
-- redemption are atomic across replicas.

CREATE TABLE device_codes (
	key           text PRIMARY KEY,
	user_code_key text NOT NULL UNIQUE,
	data          jsonb NOT NULL,
	expires_at    timestamptz NOT NULL
);
CREATE INDEX device_codes_expires_at ON device_codes (expires_at);
