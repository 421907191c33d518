# The core library's C tests: each tests/test_*.c is a program linked
# against build/libconvcache.so and run by `make test`.

CORE_TESTS := test_api test_args test_threads test_procs test_kill test_fork test_flight test_stall test_modes test_hits \
              test_secure test_hammer
CORE_TEST_BINS := $(addprefix $(BUILD)/tests/,$(CORE_TESTS))

$(BUILD)/tests/%: tests/%.c tests/check.h tests/tmpdir.h $(LIB) $(BUILD)/include/.stamp
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) -o $@ $< $(LINK_CC)

# test_secure runs a set-user-ID copy of itself and of test_secure_dyn (the
# run-time loader, built with -std=c11 and no feature macros) with a
# library another user controls named in the environment.
$(BUILD)/tests/libccevil.so: tests/secure_evil.c
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) -shared -fPIC -o $@ $<

$(BUILD)/tests/test_secure_dyn: tests/test_secure_dyn.c $(BUILD)/include/.stamp
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) -std=c11 -pedantic -I$(BUILD)/include -o $@ $< -Wl,-rpath,$(ABS_BUILD) -ldl -lpthread

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
