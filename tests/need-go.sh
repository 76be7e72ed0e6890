#!/bin/sh
# need-go.sh GO: checks that the Go command GO can build glean (go.mod asks
# for Go 1.24). Go 1.21 and later fetch the toolchain go.mod names by
# themselves from the Go module proxy, verified against the checksum
# database (GOTOOLCHAIN=auto, Go's own mechanism), so any Go >= 1.21 will
# do; an older one (Debian 12's golang is 1.19) or none is refused with
# what to do. Exit 0: usable (print nothing); 1: not, with a message.
set -eu

go=${1:-go}
need="Go >= 1.21 (it fetches the Go 1.24 toolchain that go.mod asks for itself)"
how="install the official release as root (Debian 12's golang package is 1.19, too old):
  v=\$(curl -fsSL 'https://go.dev/VERSION?m=text' | head -n1)   # e.g. go1.24.4; or pick one from https://go.dev/dl
  curl -fsSL \"https://go.dev/dl/\$v.linux-amd64.tar.gz\" | tar -C /usr/local -xz
  export PATH=/usr/local/go/bin:\$PATH
then run make again (or: make GO=/usr/local/go/bin/go ...)"

if ! command -v "$go" >/dev/null 2>&1; then
	# shellcheck disable=SC2016 # the backquotes are printed, not run
	printf 'make: %s is needed, and `%s` is not in PATH; %s\n' "$need" "$go" "$how" >&2
	exit 1
fi
v=$("$go" version 2>/dev/null | awk '{print $3}')
minor=$(printf '%s\n' "$v" | sed -n 's/^go1\.\([0-9][0-9]*\).*/\1/p')
if [ -z "$minor" ] || [ "$minor" -lt 21 ]; then
	printf 'make: %s is needed, found %s (%s); %s\n' "$need" "${v:-an unknown version}" "$(command -v "$go")" "$how" >&2
	exit 1
fi
if [ "$("$go" env GOTOOLCHAIN 2>/dev/null)" = local ] && [ "$minor" -lt 24 ]; then
	printf 'make: found %s with GOTOOLCHAIN=local: it cannot fetch Go 1.24; unset GOTOOLCHAIN (or set it to auto), or %s\n' "$v" "$how" >&2
	exit 1
fi
