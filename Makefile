# glean: see README.md. `make test` is what CI runs (.ci/run).
GO       ?= go
BIN      := bin
PKGS     := ./...
FUZZTIME ?= 10s
# Fuzz targets as package:FuzzName, found by grep so new ones join automatically.
FUZZ_TARGETS = $(shell grep -rl --include='*_test.go' '^func Fuzz' sidecar | xargs -r grep -Ho '^func Fuzz[A-Za-z0-9_]*' | sed 's|/[^/]*_test.go:func |:|')

.PHONY: all build spank test unit bench lint fuzz deps clean demo

all: build

build: spank
	@mkdir -p $(BIN)
	$(GO) build -trimpath -o $(BIN)/ ./cmd/glean ./cmd/gleand ./cmd/glean-agent ./cmd/glean-helper

# spank builds the SPANK plugin that makes `#SBATCH --glean` valid (spank/glean.c
# says how an admin installs it). Needs Slurm's headers: libslurm-dev.
SPANK_CFLAGS ?= -Wall -Wextra -Werror -O2 -fPIC -shared
spank: spank/glean.so
spank/glean.so: spank/glean.c
	$(CC) $(SPANK_CFLAGS) $(CPPFLAGS) -o $@ $< || { echo "make: building $@ needs gcc and Slurm's slurm/spank.h (Debian: apt-get install libslurm-dev)" >&2; exit 1; }

# deps installs what the tests need: Debian's Slurm and munge (as root), Go modules.
deps:
	@command -v $(GO) >/dev/null || { echo "make: Go >= 1.24 is needed (https://go.dev/dl): not found in PATH" >&2; exit 1; }
	@if [ "$$(id -u)" -eq 0 ]; then tests/loopback-slurm.sh install; else tests/loopback-slurm.sh install || true; fi
	$(GO) mod download

# test runs everything: unit tests, fuzz seed corpora, and the integration
# tests against a real loopback Slurm (which fail, not skip, when it cannot start).
test: deps build
	GLEAN_REQUIRE_SLURM=1 $(GO) test -count=1 -timeout 25m $(PKGS)

# unit runs the tests that need no Slurm.
unit:
	$(GO) test -count=1 ./sidecar/...

bench: deps
	GLEAN_REQUIRE_SLURM=1 $(GO) test -run '^$$' -bench . -benchmem -timeout 30m $(PKGS)

# fuzz runs every fuzz target for FUZZTIME each (make fuzz FUZZTIME=10m).
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		pkg=./$${t%%:*}; name=$${t##*:}; \
		echo "== $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $$pkg; \
	done

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet $(PKGS)
	@if command -v shellcheck >/dev/null; then shellcheck tests/*.sh .ci/run $$(ls wrappers/* jobscripts/*.sh jobscripts/examples/*.sh 2>/dev/null); else echo "shellcheck not installed: skipped"; fi

# demo is delivered by issue #5 (execution path); until then it says so.
demo:
	@echo "make demo: the end-to-end demo (SLURM-only vs glean on a loopback cluster) arrives with the execution-path issue (#5); not available yet." >&2; exit 2

clean:
	rm -rf $(BIN)
	rm -f spank/glean.so
	$(GO) clean -testcache
