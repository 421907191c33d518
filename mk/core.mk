# The core library's C tests: each tests/test_*.c is a program linked
# against build/libconvcache.so and run by `make test`.

CORE_TESTS := test_api test_args test_threads test_procs test_kill test_fork test_flight test_stall test_modes test_hits \
              test_secure test_hammer
CORE_TEST_BINS := $(addprefix $(BUILD)/tests/,$(CORE_TESTS))

$(BUILD)/tests/%: tests/%.c tests/check.h tests/tmpdir.h $(LIB) $(BUILD)/include/.stamp
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) -o $@ $< $(LINK_CC)

# test_secure runs a set-user-ID copy of itself and of test_secure_dyn (the
# run-time loader, built with -std=c11 and no feature macros, and with the
# build directory as its installation's library directory) with a library
# another user controls named in the environment.
$(BUILD)/tests/libccevil.so: tests/secure_evil.c
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) -shared -fPIC -o $@ $<

$(BUILD)/tests/test_secure_dyn: tests/test_secure_dyn.c $(BUILD)/include/.stamp
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) -std=c11 -pedantic -I$(BUILD)/include -DCONVCACHE_INSTALL_LIBDIR='"$(ABS_BUILD)"' -o $@ $< -ldl -lpthread

c-test: $(BUILD)/tests/libccevil.so $(BUILD)/tests/test_secure_dyn

# TEST_TIMEOUT (seconds) only ends a test that hangs: no test comes near it.
TEST_TIMEOUT ?= 900
c-test: $(CORE_TEST_BINS)
	@for t in $(CORE_TEST_BINS); do echo "== $$t"; timeout -k 10 $(TEST_TIMEOUT) $$t || exit 1; done

# Crash torture: a short run in `make test`, a long one in `make torture`.
$(BUILD)/tests/torture_writer: tests/torture_writer.c $(LIB) $(BUILD)/include/.stamp
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) -o $@ $< $(LINK_CC)

$(BUILD)/torture: tests/torture/main.go $(GO_SRC)
	$(GO) build -o $@ ./tests/torture

.PHONY: torture-short torture
torture-short: $(BUILD)/torture $(BUILD)/tests/torture_writer
	$(BUILD)/torture -writer $(BUILD)/tests/torture_writer -kills 100 -writers 4

torture: $(BUILD)/torture $(BUILD)/tests/torture_writer
	$(BUILD)/torture -writer $(BUILD)/tests/torture_writer -kills $${KILLS:-3000} -writers 6 -compact 256K

TEST_TARGETS += torture-short

# The lifecycle torture (tests/test_lifecycle.c): every call racing closes
# of its handle, from threads that come and go, beside peers that compact.
# It links a test build of the library, which adds one export,
# convcache_test_live (capi/testhooks.go, under the tag convcache_testhooks),
# to see at the end that nothing is pinned or published any more. A short
# run in `make test` (and one under ThreadSanitizer, lifecycle-tsan below);
# `make torture` runs it for LIFECYCLE_SECONDS (300).
HOOKS_DIR := $(BUILD)/testhooks
HOOKS_LIB := $(HOOKS_DIR)/libconvcache.so.$(VERSION_MAJOR)

$(HOOKS_LIB): $(GO_SRC)
	@mkdir -p $(HOOKS_DIR)
	CGO_ENABLED=1 $(GO) build -buildmode=c-shared -trimpath -tags convcache_testhooks \
	  -ldflags "-extldflags '-Wl,--version-script=$(abspath capi/exports.map) -Wl,-soname,libconvcache.so.$(VERSION_MAJOR) -Wl,-z,nodelete'" \
	  -o $@ ./capi
	@rm -f $(basename $@).h $@.h

$(HOOKS_DIR)/test_lifecycle: tests/test_lifecycle.c tests/check.h tests/tmpdir.h $(HOOKS_LIB) $(BUILD)/include/.stamp
	$(CC) $(CFLAGS) -o $@ $< -I$(BUILD)/include $(HOOKS_LIB) -Wl,-rpath,$(abspath $(HOOKS_DIR)) -lpthread

.PHONY: lifecycle torture-lifecycle
lifecycle: $(HOOKS_DIR)/test_lifecycle
	timeout -k 10 $(TEST_TIMEOUT) $< 40000

torture-lifecycle: $(HOOKS_DIR)/test_lifecycle
	$< 0 $${LIFECYCLE_SECONDS:-300}

torture: torture-lifecycle

TEST_TARGETS += lifecycle

# The hammer (tests/test_hammer.c) under ThreadSanitizer: the test and the
# library's own C code (capi/*.c and cgo's glue, through CGO_CFLAGS) are
# instrumented, in a library of their own in build/tsan/ (as $(LIB_REAL) is
# built, plus the flags). The Go code is not: Go's -race is a TSan runtime of
# its own, and one process cannot hold both. So TSan sees the C threads (the
# readers, and whatever C runs on the hit path) but not the writes Go makes;
# `go test -race` (cache/hammer_test.go) covers the Go side.
TSAN_DIR := $(BUILD)/tsan
# TSan does not model atomic_thread_fence (-Wtsan says so at each): hit.c's
# fences are the writer's and those of readers without membarrier, not what
# the hit path relies on here.
TSAN_FLAGS := -O1 -g -fsanitize=thread -Wno-tsan

$(TSAN_DIR)/libconvcache.so.$(VERSION_MAJOR): $(GO_SRC)
	@mkdir -p $(TSAN_DIR)
	CGO_ENABLED=1 CGO_CFLAGS="$(TSAN_FLAGS)" CGO_LDFLAGS="-fsanitize=thread" $(GO) build -buildmode=c-shared -trimpath -tags convcache_testhooks \
	  -ldflags "-extldflags '-Wl,--version-script=$(abspath capi/exports.map) -Wl,-soname,libconvcache.so.$(VERSION_MAJOR) -Wl,-z,nodelete'" \
	  -o $@ ./capi
	@rm -f $(basename $@).h $@.h

$(TSAN_DIR)/test_hammer: tests/test_hammer.c tests/check.h tests/tmpdir.h $(TSAN_DIR)/libconvcache.so.$(VERSION_MAJOR) $(BUILD)/include/.stamp
	$(CC) $(CFLAGS) $(TSAN_FLAGS) -o $@ $< -I$(BUILD)/include $(TSAN_DIR)/libconvcache.so.$(VERSION_MAJOR) \
	  -Wl,-rpath,$(abspath $(TSAN_DIR)) -lpthread

# A report fails the run at exit (status 66, even after "ok"). Not
# halt_on_error: that _exits at once, and leaves the test's directory behind.
.PHONY: hammer-tsan
hammer-tsan: $(TSAN_DIR)/test_hammer
	timeout -k 10 $(TEST_TIMEOUT) $<

TEST_TARGETS += hammer-tsan

# The lifecycle torture's C side under ThreadSanitizer (the TSan library is
# a test build: it has convcache_test_live).
$(TSAN_DIR)/test_lifecycle: tests/test_lifecycle.c tests/check.h tests/tmpdir.h $(TSAN_DIR)/libconvcache.so.$(VERSION_MAJOR) $(BUILD)/include/.stamp
	$(CC) $(CFLAGS) $(TSAN_FLAGS) -o $@ $< -I$(BUILD)/include $(TSAN_DIR)/libconvcache.so.$(VERSION_MAJOR) \
	  -Wl,-rpath,$(abspath $(TSAN_DIR)) -lpthread

.PHONY: lifecycle-tsan
lifecycle-tsan: $(TSAN_DIR)/test_lifecycle
	timeout -k 10 $(TEST_TIMEOUT) $< 10000

TEST_TARGETS += lifecycle-tsan
