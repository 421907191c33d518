# The convcache command (cmd/convcache): built to build/convcache, installed
# to $(BINDIR) next to the library. Its Go tests (which build and run the
# real binary) run with `go test ./...` in go-test; cli-test checks the
# binary this makefile built.

CLI     := $(BUILD)/convcache
CLI_SRC := $(shell find cmd/convcache -name '*.go' ! -name '*_test.go' 2>/dev/null)

ALL_TARGETS     += $(CLI)
TEST_TARGETS    += cli-test
INSTALL_TARGETS += install-cli

$(CLI): $(CLI_SRC) $(GO_SRC)
	@mkdir -p $(BUILD)
	CGO_ENABLED=1 $(GO) build -trimpath -o $@ ./cmd/convcache

# A smoke test of the binary this makefile built (the Go tests cover every
# command on real files): help, stats of a file not created yet, the exit
# code of verify on a missing file, and scope, which exits 0 with a device
# and 4 without one.
cli-test: $(CLI)
	@rm -rf $(BUILD)/cli-smoke && mkdir -p $(BUILD)/cli-smoke
	$(CLI) help >/dev/null
	$(CLI) stats --json $(BUILD)/cli-smoke/cache.ccdb >/dev/null
	$(CLI) verify $(BUILD)/cli-smoke/missing.ccdb 2>/dev/null; test $$? -eq 3
	$(CLI) scope >/dev/null 2>&1; rc=$$?; test $$rc -eq 0 -o $$rc -eq 4
	@rm -rf $(BUILD)/cli-smoke
	@echo "cli-test: ok"

install-cli: $(CLI)
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(CLI) $(DESTDIR)$(BINDIR)/convcache

.PHONY: cli-test install-cli
