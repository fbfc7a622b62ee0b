package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/mcpauth/mcpauth/client"
)

func logoutCommand() command {
	return command{name: "logout", summary: "revoke and forget the token kept for an MCP server", run: runLogout}
}

func runLogout(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	s, _, ctx, finish, err := clientCommand(ctx, "logout", "[flags] URL",
		"Revoke the tokens kept for the MCP server at URL at its authorization server (RFC 7009, when\n"+
			"its metadata names a revocation_endpoint), then forget them. A failed revocation is a warning:\n"+
			"the tokens are forgotten anyway. The client registration is kept.", args, stderr, nil, 1, 1)
	if err != nil {
		return err
	}
	defer func() { err = finish(err) }()
	if err := s.logout(ctx, stderr); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "logged out of %s\n", s.url)
	return nil
}

// logout revokes and forgets the session's token. A revocation that
// failed after the token was forgotten is printed to stderr as a warning,
// not returned: the local state is gone either way.
func (s *session) logout(ctx context.Context, stderr io.Writer) error {
	err := s.client.Logout(ctx, s.url)
	if errors.Is(err, client.ErrRevocation) {
		fmt.Fprintf(stderr, "warning: the token for %s is forgotten, but its authorization server did not confirm "+
			"the revocation and may accept it until it expires: %v\n", s.url, err)
		return nil
	}
	return err
}
