# The keychain token store (client/tokenstore.Keychain) against a real
# Secret Service: GNOME Keyring in a private D-Bus session, with a test
# keyring unlocked by a throwaway password in a temporary HOME, so the
# user's own keyring is never touched. gnome-keyring and dbus are
# installed from Debian when missing. Without them the test skips, saying
# why.

.PHONY: keyring-deps test-keyring
EXTRA_TEST_TARGETS += test-keyring

keyring-deps:
	@missing=""; \
	command -v gnome-keyring-daemon >/dev/null || missing="$$missing gnome-keyring"; \
	{ command -v dbus-run-session && command -v dbus-daemon; } >/dev/null || missing="$$missing dbus"; \
	if [ -n "$$missing" ]; then \
		echo "== keyring-deps: installing$$missing"; \
		$(SUDO) apt-get update -qq; \
		$(SUDO) apt-get install -y -qq --no-install-recommends $$missing >/dev/null; \
	fi

test-keyring: keyring-deps
	@echo "== test-keyring"
	@home=$$(mktemp -d); trap 'rm -rf "$$home"' EXIT; mkdir -p -m 0700 "$$home/run"; \
	env GOMODCACHE="$$($(GO) env GOMODCACHE)" GOCACHE="$$($(GO) env GOCACHE)" GOPATH="$$($(GO) env GOPATH)" \
		HOME="$$home" XDG_DATA_HOME="$$home/share" XDG_CONFIG_HOME="$$home/config" XDG_RUNTIME_DIR="$$home/run" \
		dbus-run-session -- bash -eu -o pipefail -c '\
			printf "mcpauth-test" | gnome-keyring-daemon --unlock --components=secrets >/dev/null; \
			MCPAUTH_TEST_SECRET_SERVICE=1 $(GO) test -count=1 -v -run "^TestKeychainSecretService$$" ./client/tokenstore/ | grep -E "^(---|ok|FAIL|PASS)"'
