// Package storagetest checks an implementation of [authserver.Storage]
// against the contract the authorization server relies on, as
// testing/fstest does for file systems. The memory, bbolt and PostgreSQL
// stores all run it, and so can a store of one's own:
//
//	func TestStorage(t *testing.T) {
//		storagetest.Run(t, func(t *testing.T) authserver.Storage {
//			st := mystore.Open(t.TempDir())
//			t.Cleanup(func() { st.Close() })
//			return st.Storage()
//		})
//	}
package storagetest
