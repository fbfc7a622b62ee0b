// Package seal encrypts secrets at rest with AES-256-GCM under a key ring:
// one current key seals, every key in the ring opens, so a key can be
// replaced without re-encrypting what is stored. A sealed value names the
// key that sealed it and is bound to a caller-chosen context (the AEAD's
// additional data, typically the record's kind and ID), so a value copied
// to another record does not open.
//
// It does not derive keys from passwords or store keys: operators supply
// 32 random bytes per key.
package seal
