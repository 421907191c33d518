# make bench-dlsym (part of make bench): what the interposed dlsym costs
# (bench/dlsym/run.sh): a lookup it does not redirect against glibc's own
# (target: at most 1.2x), a redirected one, and the warm cudnnBackendExecute
# through the pointer a dlopen client gets from dlsym against the linked
# path (target: at most 50 ns added; bench/v8/exec_overhead).

$(BUILD)/bench/dlsym/dlsym_cost: bench/dlsym/dlsym_cost.c bench/median_ns.h $(BUILD)/bench/v8/libcudnn.so.9
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -o $@ $< -Wl,-rpath,$(ABS_BUILD)/bench/v8 -ldl

.PHONY: bench-dlsym
bench-dlsym: $(PRELOAD_LIB) $(BUILD)/bench/dlsym/dlsym_cost $(BUILD)/bench/v8/exec_overhead
	sh bench/dlsym/run.sh $(BUILD)
BENCH_TARGETS += bench-dlsym
