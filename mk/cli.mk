# The convcache command (cmd/convcache): built to build/convcache, installed
# to $(BINDIR) next to the library. Its Go tests (which build and run the
# real binary) run with `go test ./...` in go-test; cli-test checks the
# binary this makefile built, and runs the Go tests that need what make
# builds: the interposer with the stand-in cuDNN (convcache run, convcache
# doctor, with a stand-in libtorch_cuda.so) and the demo (convcache ls on
# the demo's cache).

CLI     := $(BUILD)/convcache
CLI_SRC := $(shell find cmd/convcache \( -name '*.go' ! -name '*_test.go' \) -o -name '*.py' 2>/dev/null)
# What cli-test's Go tests use (the rules are in cudnn.mk, cxx.mk and the
# Makefile, included after this file: named in full here).
CLI_TEST_DEPS := $(BUILD)/libconvcache_preload.so $(BUILD)/libconvcache.so \
                 $(BUILD)/tests/preload/preload_prog $(BUILD)/tests/preload/libcudnn.so.9 \
                 $(BUILD)/tests/preload/libcuda.so.1 $(BUILD)/tests/preload/v8_prog $(BUILD)/examples/demo \
                 $(BUILD)/tests/doctor/libtorch_cuda.so

ALL_TARGETS     += $(CLI)
TEST_TARGETS    += cli-test
INSTALL_TARGETS += install-cli

# A stand-in for PyTorch's libtorch_cuda.so (tests/doctor), for convcache
# doctor's tests: it imports both paths' cuDNN functions from the stand-in
# cuDNN, beside which it finds it.
$(BUILD)/tests/doctor/libtorch_cuda.so: tests/doctor/libtorch_cuda.c tests/cudnn_served.h $(BUILD)/tests/preload/libcudnn.so.9
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $< -L$(BUILD)/tests/preload -l:libcudnn.so.9 -Wl,-rpath,'$$ORIGIN/../preload'

$(CLI): $(CLI_SRC) $(GO_SRC)
	@mkdir -p $(BUILD)
	CGO_ENABLED=1 $(GO) build -trimpath -o $@ ./cmd/convcache

# The command's version is the library's: generated from the header.
cmd/convcache/version_header.go: include/convcache.h cmd/convcache/mkversion.go
	cd cmd/convcache && $(GO) run mkversion.go

# A smoke test of the binary this makefile built (the Go tests cover every
# command on real files): help, version, stats, compact and verify of a
# default file not created yet (nothing cached yet, exit 0), the exit code of stats and verify on a
# PATH that does not exist, and scope, which exits 0 with a device and 4
# without one.
# Then the Go tests that need the interposer, the stand-ins and the demo.
cli-test: $(CLI) $(CLI_TEST_DEPS)
	@rm -rf $(BUILD)/cli-smoke && mkdir -p $(BUILD)/cli-smoke
	$(CLI) help >/dev/null
	$(CLI) --version
	CONVCACHE_PATH=$(BUILD)/cli-smoke/cache.ccdb $(CLI) stats --json >/dev/null
	CONVCACHE_PATH=$(BUILD)/cli-smoke/cache.ccdb $(CLI) compact >/dev/null
	CONVCACHE_PATH=$(BUILD)/cli-smoke/cache.ccdb $(CLI) verify >/dev/null
	$(CLI) stats $(BUILD)/cli-smoke/missing.ccdb 2>/dev/null; test $$? -eq 3
	$(CLI) verify $(BUILD)/cli-smoke/missing.ccdb 2>/dev/null; test $$? -eq 3
	$(CLI) scope >/dev/null 2>&1; rc=$$?; test $$rc -eq 0 -o $$rc -eq 4
	@rm -rf $(BUILD)/cli-smoke
	CONVCACHE_TEST_BUILD=$(ABS_BUILD) $(GO) test -count=1 -run 'TestRunInterposerCaches|TestRunReport|TestLsDemoCache|TestDoctor' ./cmd/convcache
	@echo "cli-test: ok"

install-cli: $(CLI)
	install -d $(DESTDIR)$(BINDIR)
	install -m 0755 $(CLI) $(DESTDIR)$(BINDIR)/convcache

.PHONY: cli-test install-cli
