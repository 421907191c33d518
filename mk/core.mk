# The core library's C tests: each tests/test_*.c is a program linked
# against build/libconvcache.so and run by `make test`.

CORE_TESTS := test_api test_threads test_procs test_kill test_fork test_flight test_stall
CORE_TEST_BINS := $(addprefix $(BUILD)/tests/,$(CORE_TESTS))

$(BUILD)/tests/%: tests/%.c tests/check.h $(LIB) $(BUILD)/include/.stamp
	@mkdir -p $(BUILD)/tests
	$(CC) $(CFLAGS) -o $@ $< $(LINK_CC)

c-test: $(CORE_TEST_BINS)
	@for t in $(CORE_TEST_BINS); do echo "== $$t"; $$t || exit 1; done
