# glean: see README.md. `make test` is what CI runs (.ci/run).
GO       ?= go
BIN      := bin
PKGS     := ./...
FUZZTIME ?= 10s
# Fuzz targets as package:FuzzName, found by grep so new ones join automatically.
FUZZ_TARGETS = $(shell grep -rl --include='*_test.go' '^func Fuzz' sidecar spank | xargs -r grep -Ho '^func Fuzz[A-Za-z0-9_]*' | sed 's|/[^/]*_test.go:func |:|')

.PHONY: all build spank test unit bench lint fuzz deps clean demo chaos

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
	@tests/need-go.sh "$(GO)"
	@if [ "$$(id -u)" -eq 0 ]; then tests/loopback-slurm.sh install; else tests/loopback-slurm.sh install || true; fi
	$(GO) mod download

# test runs everything: unit tests, fuzz seed corpora, and the integration
# tests against a real loopback Slurm (which fail, not skip, when it cannot start).
test: deps build
	GLEAN_REQUIRE_SLURM=1 $(GO) test -count=1 -timeout 25m $(PKGS)
	@echo "== the end-to-end suite again with file watching off (periodic rescan only, as on NFS)"
	GLEAN_REQUIRE_SLURM=1 GLEAN_NO_WATCH=1 $(GO) test -count=1 -timeout 15m ./tests/execution

# chaos runs the crash-recovery tests in their long versions (slurmctld
# down for 60 s instead of 20 s).
chaos: deps build
	GLEAN_REQUIRE_SLURM=1 GLEAN_CHAOS_LONG=1 $(GO) test -count=1 -v -timeout 60m ./tests/recovery

# unit runs the tests that need no Slurm.
unit:
	$(GO) test -count=1 ./sidecar/...

bench: deps
	GLEAN_REQUIRE_SLURM=1 $(GO) test -run '^$$' -bench . -benchmem -timeout 30m $(PKGS)

# fuzz runs every fuzz target for FUZZTIME each (make fuzz FUZZTIME=10m),
# one after the other; FUZZ (a grep -E pattern without '$') picks targets
# by package:name (FUZZ='submit:|spool:FuzzDecodeEntry'), FUZZFLAGS is passed on (e.g. -parallel=1 on a shared
# machine). It goes on past a failure and fails at the end, naming them;
# a failing input is written to the package's testdata/fuzz/<Name>/.
FUZZ      ?= .
FUZZFLAGS ?=
fuzz:
	@failed=""; for t in $$(echo "$(FUZZ_TARGETS)" | tr ' ' '\n' | grep -E -- '$(FUZZ)'); do \
		pkg=./$${t%%:*}; name=$${t##*:}; \
		echo "== $$pkg $$name ($(FUZZTIME))"; \
		$(GO) test -run '^$$' -fuzz "^$$name$$" -fuzztime $(FUZZTIME) $(FUZZFLAGS) $$pkg || failed="$$failed $$t"; \
	done; \
	if [ -n "$$failed" ]; then echo "fuzz: failed:$$failed" >&2; exit 1; fi

lint:
	@out=$$(gofmt -l $$(git ls-files '*.go')); [ -z "$$out" ] || { echo "gofmt needed:"; echo "$$out"; exit 1; }
	$(GO) vet $(PKGS)
	@if command -v shellcheck >/dev/null; then shellcheck tests/*.sh .ci/run $$(ls wrappers/* jobscripts/*.sh jobscripts/examples/*.sh 2>/dev/null); else echo "shellcheck not installed: skipped"; fi

# demo runs one workload on two fresh loopback clusters side by side,
# SLURM-only and glean, and prints utilization, the elastic job's
# turnaround and the regular jobs' wait (tests/demo); plots go to DEMO_OUT.
# It needs root (slurmd starts jobs as their users); as root it first
# installs Debian's Slurm and munge if missing. Its 10-minute budget runs
# from here: the demo stops with an error past it (DEMO_BUDGET seconds).
DEMO_OUT    ?= demo-out
DEMO_BUDGET ?= 600
demo:
	@start=$$(date +%s); \
	tests/need-go.sh "$(GO)" || exit 1; \
	[ "$$(id -u)" -eq 0 ] || { echo "make demo: needs root (slurmd starts jobs as their users, glean adds its users)" >&2; exit 1; }; \
	echo "make demo: [$$(($$(date +%s) - start)) s] checking Debian's Slurm and munge (installed if missing)"; \
	tests/loopback-slurm.sh install || exit 1; \
	echo "make demo: [$$(($$(date +%s) - start)) s] building the demo (go build; a first build downloads the Go modules)"; \
	mkdir -p $(BIN) && GOTOOLCHAIN=auto $(GO) build -o $(BIN)/demo ./tests/demo || exit 1; \
	GOTOOLCHAIN=auto $(BIN)/demo -out $(DEMO_OUT) -started $$start -budget $(DEMO_BUDGET)s
