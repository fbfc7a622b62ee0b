package storagetest

import (
	"context"
	"testing"
	"time"

	"github.com/mcpauth/mcpauth/authserver"
)

// testGrantLister: a grant store that lists grants by subject returns the
// subject's live grants, revoked ones included, newest first, within the
// limit, and no other subject's.
func testGrantLister(t *testing.T, st authserver.Storage) {
	gl, ok := st.Grants.(authserver.GrantLister)
	if !ok {
		t.Skip("the grant store does not implement GrantLister")
	}
	ctx := context.Background()
	for _, g := range []*authserver.Grant{
		{ID: "a-old", ClientID: "c", Subject: "alice", CreatedAt: storageNow.Add(-2 * time.Hour), ExpiresAt: storageNow.Add(time.Hour)},
		{ID: "a-new", ClientID: "c", Subject: "alice", CreatedAt: storageNow.Add(-time.Hour), ExpiresAt: storageNow.Add(time.Hour)},
		{ID: "a-expired", ClientID: "c", Subject: "alice", CreatedAt: storageNow.Add(-3 * time.Hour), ExpiresAt: storageNow.Add(-time.Minute)},
		{ID: "b", ClientID: "c", Subject: "bob", CreatedAt: storageNow, ExpiresAt: storageNow.Add(time.Hour)},
	} {
		if err := st.Grants.SaveGrant(ctx, g); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Grants.RevokeGrant(ctx, "a-old"); err != nil {
		t.Fatal(err)
	}
	gs, err := gl.GrantsBySubject(ctx, "alice", storageNow, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(gs) != 2 || gs[0].ID != "a-new" || gs[1].ID != "a-old" || !gs[1].Revoked || gs[0].Revoked {
		t.Fatalf("alice's grants: %+v", gs)
	}
	if gs, err := gl.GrantsBySubject(ctx, "alice", storageNow, 1); err != nil || len(gs) != 1 || gs[0].ID != "a-new" {
		t.Fatalf("limit 1: %+v, %v", gs, err)
	}
	if gs, err := gl.GrantsBySubject(ctx, "carol", storageNow, 10); err != nil || len(gs) != 0 {
		t.Fatalf("an unknown subject: %+v, %v", gs, err)
	}
}
