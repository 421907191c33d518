# The Redis cluster tier (package remote; see docs/cluster.md).
#
#   make remote-test    the C test: the built library against a real
#                       redis-server (skipped if none is installed)
#   make remote-go-test the Go tests of the tier alone (they also run in
#                       `make go-test`)
#   make bench-remote   four simulated nodes sharing one Redis

REMOTE_TEST_BIN := $(BUILD)/tests/remote/test_remote

$(REMOTE_TEST_BIN): tests/remote/test_remote.c tests/check.h tests/tmpdir.h $(LIB) $(BUILD)/include/.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -o $@ $< $(LINK_CC)

$(BUILD)/clusterbench: $(wildcard remote/cmd/clusterbench/*.go) $(GO_SRC)
	$(GO) build -o $@ ./remote/cmd/clusterbench

.PHONY: remote-test remote-go-test bench-remote
remote-test: $(REMOTE_TEST_BIN)
	timeout -k 10 $(TEST_TIMEOUT) $(REMOTE_TEST_BIN)

remote-go-test:
	$(GO) vet ./remote/... ./internal/config/
	$(GO) test -race -count=1 -timeout 600s ./remote/... ./internal/config/

bench-remote: $(BUILD)/clusterbench
	$(BUILD)/clusterbench $(CLUSTERBENCH_FLAGS)

TEST_TARGETS  += remote-test
BENCH_TARGETS += bench-remote
