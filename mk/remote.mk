# The Redis cluster tier (package remote; see docs/cluster.md).
#
#   make remote-test    the C test: the built library against a real
#                       redis-server (skipped if none is installed)
#   make remote-go-test the Go tests of the tier alone (they also run in
#                       `make go-test`)
#   make remote-v8-test two nodes of PyTorch's default-path sequence (the
#                       real cudnn_frontend on the stand-in cuDNN, under
#                       convcache run, each its own file) on one real Redis:
#                       behind a proxy that delivers every reply 200 ms
#                       late, each graph is benchmarked once; with Redis
#                       down, no lookup waits past the build deadline
#                       (remote/v8nodes_test.go)
#   make bench-remote   four simulated nodes sharing one Redis, then the
#                       two-node default-path case (clusterbench -v8)

REMOTE_TEST_BIN := $(BUILD)/tests/remote/test_remote

$(REMOTE_TEST_BIN): tests/remote/test_remote.c tests/check.h tests/tmpdir.h $(LIB) $(BUILD)/include/.stamp
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -Itests -o $@ $< $(LINK_CC)

# What the two-node default-path runs use (the rules are in cudnn.mk,
# v8fe.mk and cli.mk: named in full here).
REMOTE_V8_DEPS := $(BUILD)/tests/v8fe/torch_like $(BUILD)/libconvcache_preload.so $(LIB) $(BUILD)/convcache

$(BUILD)/clusterbench: $(wildcard remote/cmd/clusterbench/*.go remote/internal/*/*.go) $(GO_SRC)
	$(GO) build -o $@ ./remote/cmd/clusterbench

.PHONY: remote-test remote-go-test remote-v8-test bench-remote
remote-test: $(REMOTE_TEST_BIN)
	timeout -k 10 $(TEST_TIMEOUT) $(REMOTE_TEST_BIN)

remote-go-test:
	$(GO) vet ./remote/... ./internal/config/
	$(GO) test -race -count=1 -timeout 600s ./remote/... ./internal/config/

remote-v8-test: $(REMOTE_V8_DEPS)
	CONVCACHE_TEST_BUILD=$(ABS_BUILD) $(GO) test -count=1 -timeout 600s -v -run 'TestTwoNodesV8' ./remote/

bench-remote: $(BUILD)/clusterbench $(REMOTE_V8_DEPS)
	$(BUILD)/clusterbench -v8 $(ABS_BUILD) $(CLUSTERBENCH_FLAGS)

TEST_TARGETS  += remote-test remote-v8-test
BENCH_TARGETS += bench-remote
