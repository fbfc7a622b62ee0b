package boltstore

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"

	"github.com/mcpauth/mcpauth/authserver"
)

// refsBucket indexes the connect references (authserver.TicketRef) by
// subject: a key is the SHA-256 of the subject, the reference's expiry
// (Unix nanoseconds, big-endian) and its ticket ID, so that a subject's
// references are one cursor range in expiry order, however many tickets
// the file holds. The value is empty.
const refsBucket = "connect_refs"

func isRef(t *authserver.ConnectTicket) bool {
	return t.Kind == authserver.TicketRef && t.Subject != ""
}

func refPrefix(subject string) []byte {
	h := sha256.Sum256([]byte(subject))
	return h[:]
}

func refKey(t *authserver.ConnectTicket) []byte {
	k := append(refPrefix(t.Subject), make([]byte, 8)...)
	binary.BigEndian.PutUint64(k[sha256.Size:], uint64(t.ExpiresAt.UnixNano()))
	return append(k, t.ID...)
}

// makeRoomForRef deletes the subject's references that expire first
// until a new one fits under authserver.MaxConnectRefsPerSubject.
func makeRoomForRef(tx *bolt.Tx, subject string) error {
	idx, tickets := tx.Bucket([]byte(refsBucket)), tx.Bucket([]byte(ticketsBucket))
	prefix := refPrefix(subject)
	var keys [][]byte
	c := idx.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, _ = c.Next() {
		keys = append(keys, bytes.Clone(k))
	}
	for i := 0; len(keys)-i >= authserver.MaxConnectRefsPerSubject; i++ {
		if err := tickets.Delete(keys[i][sha256.Size+8:]); err != nil {
			return err
		}
		if err := idx.Delete(keys[i]); err != nil {
			return err
		}
	}
	return nil
}

// sweepRefs drops the index entries whose ticket is gone (taken by
// another version, or swept).
func sweepRefs(tx *bolt.Tx) error {
	idx, tickets := tx.Bucket([]byte(refsBucket)), tx.Bucket([]byte(ticketsBucket))
	var stale [][]byte
	err := idx.ForEach(func(k, _ []byte) error {
		if len(k) < sha256.Size+8 || tickets.Get(k[sha256.Size+8:]) == nil {
			stale = append(stale, bytes.Clone(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range stale {
		if err := idx.Delete(k); err != nil {
			return err
		}
	}
	return nil
}
