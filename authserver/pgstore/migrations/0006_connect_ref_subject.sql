-- The subject of a connect reference (kind "ref"), so that a user's
-- references are found by an index and bounded (MaxConnectRefsPerSubject);
-- NULL for the other kinds of ticket.

ALTER TABLE connect_tickets ADD COLUMN ref_subject text;
CREATE INDEX connect_tickets_ref_subject ON connect_tickets (ref_subject, expires_at) WHERE ref_subject IS NOT NULL;
