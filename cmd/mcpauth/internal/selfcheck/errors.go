package selfcheck

import "errors"

// ErrConfig is returned by [Run] for a [Config] it cannot run with: a
// missing or unsafe URL, or an invalid Origin. The message names the field,
// never the token.
var ErrConfig = errors.New("selfcheck: invalid config")
