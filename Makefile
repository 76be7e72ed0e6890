# glean: see README.md. `make test` is what CI runs (.ci/run).
GO       ?= go
BIN      := bin
PKGS     := ./...
FUZZTIME ?= 10s
# Fuzz targets as package:FuzzName, found by grep so new ones join automatically.
FUZZ_TARGETS = $(shell grep -rl --include='*_test.go' '^func Fuzz' sidecar spank | xargs -r grep -Ho '^func Fuzz[A-Za-z0-9_]*' | sed 's|/[^/]*_test.go:func |:|')

.PHONY: all build binaries spank test unit bench lint fuzz deps clean demo chaos install dist rpm

# The version: contrib/glean.spec's, the one place it is written.
VERSION := $(shell sed -n 's/^Version:[[:space:]]*//p' contrib/glean.spec)
GOLDFLAGS ?= -X github.com/glean-hpc/glean/sidecar/cli.Version=$(VERSION)

all: build

build: spank binaries

# binaries builds the four Go programs only (no C compiler or Slurm headers needed).
binaries:
	@mkdir -p $(BIN)
	$(GO) build -trimpath -ldflags '$(GOLDFLAGS)' -o $(BIN)/ ./cmd/glean ./cmd/gleand ./cmd/glean-agent ./cmd/glean-helper

# spank builds the SPANK plugin that makes `#SBATCH --glean` valid (spank/glean.c
# says how an admin installs it). Needs Slurm's headers: libslurm-dev.
SPANK_CFLAGS ?= -Wall -Wextra -Werror -O2 -fPIC -shared
spank: spank/glean.so
spank/glean.so: spank/glean.c
	$(CC) $(SPANK_CFLAGS) $(CPPFLAGS) -o $@ $< || { echo "make: building $@ needs gcc and Slurm's slurm/spank.h (Debian: apt-get install libslurm-dev)" >&2; exit 1; }

# deps installs what the tests need: Debian's Slurm and munge (as root), rpm
# and groff-base (rpmbuild and the man pages' check in tests/packaging), Go modules.
deps:
	@tests/need-go.sh "$(GO)"
	@if [ "$$(id -u)" -eq 0 ]; then tests/loopback-slurm.sh install; else tests/loopback-slurm.sh install || true; fi
	@pkgs=""; command -v rpmbuild >/dev/null || pkgs="rpm"; command -v groff >/dev/null || pkgs="$$pkgs groff-base"; \
	[ -z "$$pkgs" ] || [ "$$(id -u)" -ne 0 ] || ! command -v apt-get >/dev/null || { \
		echo "make deps: installing $$pkgs (rpmbuild, groff: for tests/packaging)"; \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$pkgs >/dev/null 2>&1 || \
		{ apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$pkgs >/dev/null; }; } || true
	@command -v rpmbuild >/dev/null || echo "make deps: no rpmbuild: tests/packaging skips the RPM (Debian: apt-get install rpm)"
	@command -v groff >/dev/null || echo "make deps: no groff: tests/packaging cannot check the man pages (Debian: apt-get install groff-base)"
	$(GO) mod download

# install puts glean where etc/*.service and etc/glean.toml expect it
# (README, "Install on a cluster"). DESTDIR stages it (packages); the
# paths below are the installed ones, written into the units and the
# config when they differ from the defaults. An existing glean.toml is
# never overwritten: the new one goes beside it as glean.toml.new. The
# SPANK plugin is installed when it was built (make spank).
PREFIX     ?= /usr
BINDIR     ?= $(PREFIX)/bin
LIBDIR     ?= $(PREFIX)/lib64
SPANKDIR   ?= $(LIBDIR)/slurm
LIBEXECDIR ?= $(PREFIX)/libexec
DATADIR    ?= $(PREFIX)/share
SYSCONFDIR ?= /etc
UNITDIR    ?= /usr/lib/systemd/system
SYSUSERSDIR ?= /usr/lib/sysusers.d
TMPFILESDIR ?= /usr/lib/tmpfiles.d
MANDIR     ?= $(DATADIR)/man
SPOOLDIR   ?= /var/spool/glean
INSTALL    ?= install
# What the units and the config say, rewritten to the paths above.
INSTALL_SED = -e 's|/usr/bin/glean|$(BINDIR)/glean|g' -e 's|/etc/glean/|$(SYSCONFDIR)/glean/|g' \
	-e 's|/usr/libexec/glean/|$(LIBEXECDIR)/glean/|g' -e 's|/var/spool/glean|$(SPOOLDIR)|g'
install: binaries
	$(INSTALL) -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(LIBEXECDIR)/glean $(DESTDIR)$(DATADIR)/glean/wrappers \
		$(DESTDIR)$(DATADIR)/glean/examples $(DESTDIR)$(SYSCONFDIR)/glean $(DESTDIR)$(UNITDIR) \
		$(DESTDIR)$(SYSUSERSDIR) $(DESTDIR)$(TMPFILESDIR)
	$(INSTALL) -m 0755 $(BIN)/glean $(BIN)/gleand $(BIN)/glean-agent $(BIN)/glean-helper $(DESTDIR)$(BINDIR)/
	$(INSTALL) -m 0755 jobscripts/pilot.sh $(DESTDIR)$(LIBEXECDIR)/glean/pilot.sh
	@# The wrapper's first line names the installed glean, which the kernel runs (no shell: see the file).
	sed $(INSTALL_SED) wrappers/sbatch >$(DESTDIR)$(DATADIR)/glean/wrappers/sbatch && chmod 0755 $(DESTDIR)$(DATADIR)/glean/wrappers/sbatch
	@line=$$(head -n 1 $(DESTDIR)$(DATADIR)/glean/wrappers/sbatch); case "$$line" in *" "*" "*) ok=no;; *) ok=yes;; esac; \
	[ "$$ok" = yes ] && [ $${#line} -le 126 ] || { echo "make install: BINDIR=$(BINDIR) cannot be named on the wrapper's #! line (no blanks, at most 127 bytes): $$line" >&2; exit 1; }
	$(INSTALL) -m 0644 wrappers/glean.sh $(DESTDIR)$(DATADIR)/glean/glean.sh
	$(INSTALL) -m 0755 jobscripts/examples/*.sh $(DESTDIR)$(DATADIR)/glean/examples/
	for u in gleand glean-helper; do \
		sed $(INSTALL_SED) etc/$$u.service >$(DESTDIR)$(UNITDIR)/$$u.service && chmod 0644 $(DESTDIR)$(UNITDIR)/$$u.service || exit 1; \
	done
	for m in man/*.[158]; do s=$${m##*.}; $(INSTALL) -d $(DESTDIR)$(MANDIR)/man$$s && \
		sed $(INSTALL_SED) -e 's|/usr/share/glean/|$(DATADIR)/glean/|g' -e 's|@VERSION@|$(VERSION)|g' $$m >$(DESTDIR)$(MANDIR)/man$$s/$${m#man/} && \
		chmod 0644 $(DESTDIR)$(MANDIR)/man$$s/$${m#man/} || exit 1; \
	done
	sed $(INSTALL_SED) etc/glean.sysusers >$(DESTDIR)$(SYSUSERSDIR)/glean.conf && chmod 0644 $(DESTDIR)$(SYSUSERSDIR)/glean.conf
	sed $(INSTALL_SED) etc/glean.tmpfiles >$(DESTDIR)$(TMPFILESDIR)/glean.conf && chmod 0644 $(DESTDIR)$(TMPFILESDIR)/glean.conf
	@conf=$(DESTDIR)$(SYSCONFDIR)/glean/glean.toml; new=$$conf; \
	if [ -e "$$conf" ]; then new=$$conf.new; echo "make install: $$conf exists and is kept; the new default config is $$new"; fi; \
	sed $(INSTALL_SED) etc/glean.toml >"$$new" && chmod 0644 "$$new"
	@if [ -f spank/glean.so ]; then \
		$(INSTALL) -d $(DESTDIR)$(SPANKDIR) && $(INSTALL) -m 0755 spank/glean.so $(DESTDIR)$(SPANKDIR)/glean.so && \
		echo "make install: SPANK plugin in $(SPANKDIR)/glean.so; add to plugstack.conf on login and compute nodes: optional $(SPANKDIR)/glean.so spool=$(SPOOLDIR) user=glean partition=pilot"; \
	else echo "make install: no SPANK plugin (spank/glean.so not built: make spank, needs libslurm-dev)"; fi
	@if [ -z "$(DESTDIR)" ]; then echo "make install: now: systemd-sysusers; systemd-tmpfiles --create glean.conf; systemctl daemon-reload; systemctl enable --now glean-helper gleand"; fi

# dist makes glean-VERSION.tar.gz from HEAD (committed work only) with the
# Go modules vendored, so that rpmbuild (and any offline build host) needs
# no module proxy. Into DISTDIR.
DISTDIR ?= dist
DIST    := glean-$(VERSION)
dist:
	@tests/need-go.sh "$(GO)"
	rm -rf $(DISTDIR)/$(DIST) && mkdir -p $(DISTDIR)/$(DIST)
	git archive HEAD | tar -x -C $(DISTDIR)/$(DIST)
	cd $(DISTDIR)/$(DIST) && $(GO) mod vendor
	tar -C $(DISTDIR) -czf $(DISTDIR)/$(DIST).tar.gz $(DIST) && rm -rf $(DISTDIR)/$(DIST)
	@echo "$(DISTDIR)/$(DIST).tar.gz"

# rpm builds glean's RPMs from `make dist` with contrib/glean.spec into
# DISTDIR/rpmbuild (RPMS/<arch>/). RPMFLAGS is passed on: RPMFLAGS='--with spank'
# builds glean-spank too (needs Slurm's headers: slurm-devel). Build on the
# distribution the cluster runs: the binaries link its glibc (cgo, for
# LDAP/SSSD user lookups).
RPMFLAGS ?=
rpm: dist
	@command -v rpmbuild >/dev/null || { echo "make rpm: needs rpmbuild (Debian/Ubuntu: apt-get install rpm; RHEL/Rocky: dnf install rpm-build)" >&2; exit 1; }
	mkdir -p $(DISTDIR)/rpmbuild/SOURCES
	cp $(DISTDIR)/$(DIST).tar.gz $(DISTDIR)/rpmbuild/SOURCES/
	@# Where rpm does not manage the system (Debian), BuildRequires cannot be checked.
	rpmbuild -bb --define "_topdir $(abspath $(DISTDIR))/rpmbuild" $$(rpm -q rpm >/dev/null 2>&1 || echo --nodeps) $(RPMFLAGS) contrib/glean.spec
	@ls $(DISTDIR)/rpmbuild/RPMS/*/*.rpm

clean:
	rm -rf $(BIN) $(DISTDIR) spank/glean.so

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
	@if command -v shellcheck >/dev/null; then shellcheck tests/*.sh .ci/run $$(ls wrappers/*.sh jobscripts/*.sh jobscripts/examples/*.sh 2>/dev/null); else echo "shellcheck not installed: skipped"; fi

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
