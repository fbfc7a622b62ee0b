package jwa

import "iter"

// MaxKeyTries bounds the signature checks one JWS can cause.
const MaxKeyTries = 4

// Candidates yields the keys of keys that may have signed a JWS with header
// "kid" kid and "alg" alg, the one selection rule of every verifier: keys
// published under kid first, then keys without an ID (all keys when kid is
// empty), each only if it [Fits] alg; a key under another ID never. At
// most [MaxKeyTries] are yielded.
func Candidates(keys []Key, kid, alg string) iter.Seq[Key] {
	return func(yield func(Key) bool) {
		n := 0
		for pass := range 2 {
			for _, k := range keys {
				exact := kid != "" && k.ID == kid
				if (pass == 0) != exact || (!exact && k.ID != "" && kid != "") {
					continue
				}
				if !Fits(k, alg) {
					continue
				}
				if n++; !yield(k) || n == MaxKeyTries {
					return
				}
			}
		}
	}
}
