# deltafs developer targets; `make help` lists them.
# Tools are pinned in scripts/install-tools.sh and installed into .tools/.

SHELL := bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := build

GO    ?= go
PKGS  ?= ./...
TOOLS := $(CURDIR)/.tools
# Tools in .tools/ come first, for recipes and for the tests they run.
export PATH := $(TOOLS)/bin:$(TOOLS)/node/node_modules/.bin:$(PATH)

TEST_FLAGS   ?= -race -count=1 -timeout 20m -tags deltafs_crashpoints
# CI's log parser reads `go test -v` lines; people prefer one line per test.
TEST_FORMAT  ?= $(if $(CI),standard-verbose,testname)
FUZZTIME     ?= 30s
SOAK_TIMEOUT ?= 2h
MODEL_CHECKS ?= 60
MODEL_STEPS  ?= 60

.PHONY: help build dist deb-smoke test bench bench-scale lint tools tools-servers tools-system fuzz soak model demo clean

help: ## list the targets
	@grep -E '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{ printf "  %-14s %s\n", $$1, $$2 }'

# The version and commit make dist stamps, for make build too (evaluated
# only when building; empty outside a git checkout, where the binary
# falls back to Go's build info).
BUILD_OUT      ?= bin/deltafs
VERSION_LDFLAGS = -X main.version=$(shell bash scripts/version.sh 2>/dev/null) -X main.commit=$(shell git rev-parse HEAD 2>/dev/null)$(shell git rev-parse HEAD >/dev/null 2>&1 && ! git diff --quiet HEAD -- 2>/dev/null && echo -dirty)

build: ## build bin/deltafs (BUILD_OUT=PATH elsewhere), stamped with the version and commit as make dist does
	$(GO) build -ldflags "$(VERSION_LDFLAGS)" -o $(BUILD_OUT) ./cmd/deltafs

dist: ## static linux amd64/arm64 binaries, man page and .deb packages (nfpm, pinned) under dist/; DIST_ARCHES=amd64 for one
	bash scripts/dist.sh

deb-smoke: ## (root) build the .deb for this machine, dpkg -i it, mount a fixture with mount -t fuse.deltafs, read, unmount, remove
	bash scripts/deb-smoke.sh

test: ## run all tests with -race (gotestsum when installed); DELTAFS_REQUIRE_ALL=1 turns skips into failures
	if command -v gotestsum >/dev/null; then \
		gotestsum --format $(TEST_FORMAT) -- $(TEST_FLAGS) $(PKGS); \
	else \
		$(GO) test $(TEST_FLAGS) $(PKGS); \
	fi

bench: ## run Go benchmarks and bench/*.sh; output kept in bench/out/
	PKGS='$(PKGS)' bash scripts/bench.sh

bench-scale: build ## scale benchmark on generated tables (DELTAFS_SCALE_SIZE=full: 100,000 commits, 1,000,000 files); see docs/benchmarks.md
	$(GO) build -o bin/scalebench ./bench/scalebench
	DELTAFS_BIN=bin/deltafs bin/scalebench

lint: ## gofmt check, go vet, staticcheck (pinned), cross-builds (linux amd64/arm64, darwin arm64); reports all findings
	bash scripts/install-tools.sh staticcheck
	PKGS='$(PKGS)' bash scripts/lint.sh

tools: ## install staticcheck, gotestsum and @duckdb/node-api into .tools/
	bash scripts/install-tools.sh dev

tools-servers: ## install the test servers versitygw, fake-gcs-server, azurite into .tools/
	bash scripts/install-tools.sh servers

tools-system: ## apt-get install fuse3, rsync and a C compiler when missing (root)
	bash scripts/install-tools.sh system

fuzz: ## run every Fuzz* target for FUZZTIME each (default 30s)
	FUZZTIME=$(FUZZTIME) bash scripts/fuzz.sh

soak: ## run the soak tests (build tag soak) in integration/
	$(GO) test -tags soak -count=1 -timeout $(SOAK_TIMEOUT) ./integration/...

model: ## the model-based test of appends and reads, long: MODEL_CHECKS sequences of about MODEL_STEPS steps (RAPID_SEED=N replays one)
	RAPID_CHECKS=$(MODEL_CHECKS) RAPID_STEPS=$(MODEL_STEPS) $(GO) test -count=1 -timeout 2h -run TestModelAppendsAndReads -v ./integration/

demo: build ## mount a generated sample table at demo/mnt and show what to try (Ctrl-C unmounts)
	bin/deltafs demo --dir $(CURDIR)/demo

clean: ## remove bin/ and dist/ (keeps measured bench/out/ and installed .tools/)
	rm -rf bin dist
