# The cuDNN LD_PRELOAD interposer (cudnn/preload), and its tests against
# stand-in cuDNN and CUDA driver libraries (tests/preload), which need no GPU.
#
#   make                      also builds build/libconvcache_preload.so
#   make cudnn-test           the interposer and fingerprint tests
#   make preload-tsan         the interposer under ThreadSanitizer (below)
#   make preload-asan         the interposer under AddressSanitizer and UBSan (below)
#   make install              also installs the interposer into $(LIBDIR)

PRELOAD_LIB := $(BUILD)/libconvcache_preload.so
STANDIN_DIR := $(BUILD)/tests/preload
STANDINS    := $(STANDIN_DIR)/libcuda.so.1 $(STANDIN_DIR)/libcudnn.so.9
PRELOAD_TEST_BINS := $(STANDIN_DIR)/preload_prog $(STANDIN_DIR)/preload_linked \
                     $(STANDIN_DIR)/scope_test $(STANDIN_DIR)/v8_prog $(STANDIN_DIR)/choices_test $(STANDIN_DIR)/key_test \
                     $(STANDIN_DIR)/v8_hosts $(STANDIN_DIR)/v8_fork $(STANDIN_DIR)/dlopen_prog $(STANDIN_DIR)/dlsym_exact \
                     $(STANDIN_DIR)/libnext_wrapper.so
PRELOAD_PROG_SRC  := tests/preload/preload_prog.c tests/preload/planted.c tests/preload/args.c

ALL_TARGETS     += $(PRELOAD_LIB)
TEST_TARGETS    += cudnn-test
INSTALL_TARGETS += install-preload

# Pure C, never linked against libconvcache (it dlopens it on first use) nor
# against cuDNN (it finds the real functions with dlsym). Exported: the six
# find functions, the six backend-API functions (cudnnBackend*),
# convcache_preload_stats, and on x86-64 dlsym and dlvsym (which redirect a
# dlopen client's lookups of the twelve, cudnn/preload/dlsym.c)
# (-fvisibility=hidden); the engine-choice code (cudnn/engine) is compiled
# in, hidden.
PRELOAD_SRC := $(wildcard cudnn/preload/*.c) $(wildcard cudnn/preload/*.S) $(wildcard cudnn/engine/*.c)
PRELOAD_HDR := $(wildcard cudnn/preload/*.h) cudnn/engine/engine.h cudnn/engine/backend_api.h \
               include/convcache.h include/convcache_engine.h
$(PRELOAD_LIB): $(PRELOAD_SRC) $(PRELOAD_HDR)
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -fPIC -shared -fvisibility=hidden -Iinclude -Icudnn/engine -o $@ $(PRELOAD_SRC) $(LDFLAGS) -ldl -lpthread
	@bad=$$(nm -D --defined-only $@ | awk '{print $$3}' | grep -v '^cudnnFind\|^cudnnBackend\|^convcache_preload_stats$$\|^dlv\{0,1\}sym$$' || true); \
	  if [ -n "$$bad" ]; then echo "$@ exports more than it should: $$bad" >&2; rm -f $@; exit 1; fi

$(STANDIN_DIR)/libcuda.so.1: tests/preload/standin_cuda.c
	@mkdir -p $(STANDIN_DIR)
	$(CC) $(CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $<

# The legacy API (standin_cudnn.c) and the backend API (standin_backend.c,
# standin_schema.c, standin_engines.c, standin_plan.c, standin_counters.c,
# standin_trace.c: see mk/v8.mk and mk/v8fe.mk).
STANDIN_CUDNN_SRC := tests/preload/standin_cudnn.c tests/preload/standin_backend.c \
                     tests/preload/standin_schema.c tests/preload/standin_engines.c \
                     tests/preload/standin_plan.c tests/preload/standin_counters.c \
                     tests/preload/standin_trace.c
$(STANDIN_DIR)/libcudnn.so.9: $(STANDIN_CUDNN_SRC) tests/preload/standin_backend.h \
  cudnn/engine/backend_api.h $(STANDIN_DIR)/libcuda.so.1
	$(CC) $(CFLAGS) -fPIC -shared -Wl,-soname,libcudnn.so.9 -Icudnn/engine -o $@ $(STANDIN_CUDNN_SRC) \
	  -L$(STANDIN_DIR) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -lpthread

$(STANDIN_DIR)/preload_prog: $(PRELOAD_PROG_SRC) tests/preload/prog.h include/convcache.h $(STANDINS)
	$(CC) $(CFLAGS) -Iinclude -o $@ $(PRELOAD_PROG_SRC) -L$(STANDIN_DIR) -l:libcudnn.so.9 \
	  -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -ldl -lpthread

# The same program linked to the interposer itself (first, so that its find
# functions win) with absolute run paths: a setuid copy of it runs in secure
# mode, where the loader ignores LD_PRELOAD paths and $$ORIGIN.
$(STANDIN_DIR)/preload_linked: $(PRELOAD_PROG_SRC) tests/preload/prog.h include/convcache.h \
  $(STANDINS) $(PRELOAD_LIB)
	$(CC) $(CFLAGS) -Iinclude -o $@ $(PRELOAD_PROG_SRC) -Wl,--no-as-needed \
	  -L$(BUILD) -l:libconvcache_preload.so -L$(STANDIN_DIR) -l:libcudnn.so.9 -l:libcuda.so.1 \
	  -Wl,-rpath,$(ABS_BUILD)/tests/preload:$(ABS_BUILD) -ldl -lpthread

# PyTorch's default-path benchmark in plain C over the backend API, linked
# to the stand-in cuDNN as libtorch_cuda is to libcudnn (tests/preload/v8_run.sh).
$(STANDIN_DIR)/v8_prog: tests/preload/v8_prog.c tests/preload/standin_runtime.h bench/gpu/conv_graph.h $(BUILD)/libconvcache_engine.a $(STANDINS) \
  $(STANDIN_DIR)/libcudart.so.13 include/convcache_engine.h
	$(CC) $(CFLAGS) -Iinclude -Icudnn/engine -Ibench/gpu -o $@ $< $(BUILD)/libconvcache_engine.a -L$(STANDIN_DIR) -l:libcudnn.so.9 \
	  -l:libcudart.so.13 -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -ldl -lpthread

# Hosts beyond PyTorch's sequence (tests/preload/v8_hosts.sh).
$(STANDIN_DIR)/v8_hosts: tests/preload/v8_hosts.c tests/preload/standin_runtime.h bench/gpu/conv_graph.h cudnn/preload/preload_stats.h \
  $(BUILD)/libconvcache_engine.a $(STANDINS) $(STANDIN_DIR)/libcudart.so.13 include/convcache_engine.h
	$(CC) $(CFLAGS) -Iinclude -Icudnn/engine -Icudnn/preload -Ibench/gpu -o $@ $< $(BUILD)/libconvcache_engine.a \
	  -L$(STANDIN_DIR) -l:libcudnn.so.9 -l:libcudart.so.13 -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -ldl -lpthread

# A child forked while threads wait inside the interposer (tests/preload/v8_hosts.sh).
$(STANDIN_DIR)/v8_fork: tests/preload/v8_fork.c tests/preload/v8_host.h tests/preload/standin_runtime.h tests/preload/standin_backend.h \
  bench/gpu/conv_graph.h cudnn/preload/preload_stats.h $(STANDINS) $(STANDIN_DIR)/libcudart.so.13
	$(CC) $(CFLAGS) -Icudnn/engine -Icudnn/preload -Ibench/gpu -o $@ $< -L$(STANDIN_DIR) -l:libcudnn.so.9 \
	  -l:libcudart.so.13 -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -ldl -lpthread

# The interposer's stored value, its code compiled in alone.
$(STANDIN_DIR)/choices_test: tests/preload/choices_test.c tests/check_plain.h cudnn/preload/v8_choices.c cudnn/engine/record.c \
  $(PRELOAD_HDR)
	@mkdir -p $(STANDIN_DIR)
	$(CC) $(CFLAGS) -Iinclude -Icudnn/engine -Icudnn/preload -o $@ $< cudnn/preload/v8_choices.c \
	  cudnn/engine/record.c -lpthread

# A graph's key from packed and canonical attributes, its code compiled in
# alone with the shadow table.
$(STANDIN_DIR)/key_test: tests/preload/key_test.c tests/check_plain.h cudnn/preload/v8_key.c cudnn/preload/v8_shadow.c \
  cudnn/preload/v8_slab.c cudnn/preload/v8_leaf.c $(PRELOAD_HDR)
	@mkdir -p $(STANDIN_DIR)
	$(CC) $(CFLAGS) -Iinclude -Icudnn/engine -Icudnn/preload -o $@ $< cudnn/preload/v8_key.c \
	  cudnn/preload/v8_shadow.c cudnn/preload/v8_slab.c cudnn/preload/v8_leaf.c -lpthread

$(STANDIN_DIR)/scope_test: tests/preload/scope_test.c $(LIB) $(BUILD)/include/.stamp
	@mkdir -p $(STANDIN_DIR)
	$(CC) $(CFLAGS) -o $@ $< $(LINK_CC)

.PHONY: cudnn-test install-preload
cudnn-test: $(LIB) $(PRELOAD_LIB) $(STANDINS) $(PRELOAD_TEST_BINS) $(BUILD)/convcache
	$(STANDIN_DIR)/choices_test
	$(STANDIN_DIR)/key_test
	sh tests/preload/run.sh $(BUILD)
	sh tests/preload/dlopen_run.sh $(BUILD)
	sh tests/preload/v8_run.sh $(BUILD) v8_prog - $(STANDIN_DIR)/v8_prog
	sh tests/preload/v8_hosts.sh $(BUILD)
	sh tests/preload/v8_time.sh $(BUILD)

install-preload: $(PRELOAD_LIB)
	install -d $(DESTDIR)$(LIBDIR)
	install -m 0755 $(PRELOAD_LIB) $(DESTDIR)$(LIBDIR)/

# make bench-v8-preload: the default (v8) path through the interposer on the
# stand-in: run 2 against run 1 time choosing plans, the warm execute's
# overhead, and a million live descriptors (bench/v8/run.sh); part of make
# bench.
$(BUILD)/bench/v8/libcudnn.so.9: bench/v8/fake_cudnn.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -shared -Wl,-soname,libcudnn.so.9 -o $@ $<
$(BUILD)/bench/v8/exec_overhead: bench/v8/exec_overhead.c bench/median_ns.h $(BUILD)/bench/v8/libcudnn.so.9
	$(CC) $(CFLAGS) -o $@ $< -L$(BUILD)/bench/v8 -l:libcudnn.so.9 -Wl,-rpath,'$$ORIGIN' -ldl

$(BUILD)/bench/v8/shadow_scale: bench/v8/shadow_scale.c cudnn/engine/backend_api.h $(STANDINS)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Icudnn/engine -o $@ $< -L$(STANDIN_DIR) -l:libcudnn.so.9 -l:libcuda.so.1 \
	  -Wl,-rpath,$(ABS_BUILD)/tests/preload

# The real cuDNN's descriptors as shadow_scale's other baseline: the
# driver functions its sublibraries need beside the stand-in's.
$(BUILD)/bench/v8/libcuda_extra.so: bench/v8/cuda_extra.c
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $<
.PHONY: bench-v8-preload
bench-v8-preload: $(PRELOAD_LIB) $(LIB) $(BUILD)/convcache $(BUILD)/tests/v8fe/torch_like $(BUILD)/bench/v8/exec_overhead \
  $(BUILD)/bench/v8/shadow_scale $(BUILD)/bench/v8/libcuda_extra.so $(STANDINS) nvidia-cudnn
	sh bench/v8/run.sh $(BUILD) $(BUILD)/tests/v8fe/torch_like --report
BENCH_TARGETS += bench-v8-preload

# preload_prog as a dlopen client (tests/preload/dlopen_shim.c): it links no
# cuDNN and takes every function with dlsym (tests/preload/dlopen_run.sh).
$(STANDIN_DIR)/dlopen_prog: $(PRELOAD_PROG_SRC) tests/preload/dlopen_shim.c tests/preload/prog.h \
  include/convcache.h $(STANDINS)
	$(CC) $(CFLAGS) -Iinclude -o $@ $(PRELOAD_PROG_SRC) tests/preload/dlopen_shim.c \
	  -Wl,-rpath,'$$ORIGIN' -ldl -lpthread
$(STANDIN_DIR)/dlsym_exact: tests/preload/dlsym_exact.c
	@mkdir -p $(STANDIN_DIR)
	$(CC) $(CFLAGS) -rdynamic -o $@ $< -ldl

# A library linked to the stand-in cuDNN as libtorch_cuda.so is to cuDNN,
# for convcache.enable()'s test (tests/wheel/enable_check.py).
$(STANDIN_DIR)/libenable_client.so: tests/preload/enable_client.c tests/cudnn_served.h $(STANDINS)
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $< -L$(STANDIN_DIR) -l:libcudnn.so.9 -Wl,-rpath,'$$ORIGIN' -ldl

# Another interposer of the forward find, which takes the next one with
# dlsym(RTLD_NEXT) (tests/preload/dlopen_run.sh).
$(STANDIN_DIR)/libnext_wrapper.so: tests/preload/next_wrapper.c
	@mkdir -p $(STANDIN_DIR)
	$(CC) $(CFLAGS) -fPIC -shared -o $@ $< -ldl

# make preload-tsan and make preload-asan: the interposer under a sanitizer
# (tests/preload/sanitize_run.sh), built from its own sources with the
# sanitizer's flags into a directory of its own, with the programs that
# drive it (built with the same flags, so the runtime is in the executable;
# the stand-in cuDNN, CUDA and runtime libraries are not instrumented, their
# mutexes and threads still seen through the interceptors).
#   preload-tsan: ThreadSanitizer, TSAN_FLAGS (mk/core.mk), build/tsan/,
#     beside the TSan build of libconvcache it dlopens from its own
#     directory (mk/core.mk: the C code instrumented, the Go code not, as
#     one process cannot hold Go's race runtime and TSan's).
#   preload-asan: AddressSanitizer and UndefinedBehaviorSanitizer (every
#     out-of-bounds access, use after free, double free and undefined
#     operation of the interposer's C code fails them), ASAN_FLAGS,
#     build/asan/, beside libconvcache as shipped (a link to it: its Go
#     code needs no instrumentation).
ENGINE_SRC := $(wildcard cudnn/engine/*.c)
ASAN_DIR := $(BUILD)/asan
ASAN_FLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined

# The interposed dlsym's C side (dlsym.c, dlsym_libc.c) is not
# instrumented: a sanitizer's runtime calls dlsym, which is this library's,
# to find the functions its interceptors wrap, while it starts and before
# it can run instrumented code (TSan's function-entry hook crashed there).
# Only those two files' own loads and stores go unseen; the interposer as
# shipped runs under a sanitized program first in sanitize_run.sh.
PRELOAD_SAN_PLAIN := cudnn/preload/dlsym.c cudnn/preload/dlsym_libc.c
PRELOAD_SAN_PLAIN_OBJ := $(patsubst cudnn/preload/%.c,$(BUILD)/san-plain/%.o,$(PRELOAD_SAN_PLAIN))
$(BUILD)/san-plain/%.o: cudnn/preload/%.c $(PRELOAD_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden -Iinclude -Icudnn/engine -c -o $@ $<

$(ASAN_DIR)/libconvcache.so.$(VERSION_MAJOR): $(LIB)
	@mkdir -p $(ASAN_DIR)
	ln -sf ../libconvcache.so.$(VERSION_MAJOR) $@
	ln -sf libconvcache.so.$(VERSION_MAJOR) $(ASAN_DIR)/libconvcache.so

# preload_sanitized NAME, DIR, FLAGS, MODE: make preload-NAME, the
# interposer and the v8 programs built with FLAGS into DIR, run by
# sanitize_run.sh in MODE.
define preload_sanitized
$(2)/libconvcache_preload.so: $(PRELOAD_SRC) $(PRELOAD_HDR) $(PRELOAD_SAN_PLAIN_OBJ)
	@mkdir -p $(2)
	$(CC) $(CFLAGS) $(3) -fPIC -shared -fvisibility=hidden -Iinclude -Icudnn/engine -o $$@ \
	  $(filter-out $(PRELOAD_SAN_PLAIN),$(PRELOAD_SRC)) $(PRELOAD_SAN_PLAIN_OBJ) $(LDFLAGS) -ldl -lpthread
$(2)/v8_%: tests/preload/v8_%.c tests/preload/v8_host.h tests/preload/standin_runtime.h bench/gpu/conv_graph.h \
  $(ENGINE_SRC) $(STANDINS) $(STANDIN_DIR)/libcudart.so.13
	@mkdir -p $(2)
	$(CC) $(CFLAGS) $(3) -Iinclude -Icudnn/engine -Icudnn/preload -Ibench/gpu -o $$@ $$< $(ENGINE_SRC) \
	  -L$(STANDIN_DIR) -l:libcudnn.so.9 -l:libcudart.so.13 -l:libcuda.so.1 -Wl,-rpath,$(ABS_BUILD)/tests/preload -ldl -lpthread
.PHONY: preload-$(1)
preload-$(1): $(2)/libconvcache_preload.so $(2)/libconvcache.so.$(VERSION_MAJOR) \
  $(addprefix $(2)/,v8_prog v8_hosts v8_stress v8_fork) $(BUILD)/convcache $(PRELOAD_LIB) $(LIB)
	timeout -k 10 $(TEST_TIMEOUT) sh tests/preload/sanitize_run.sh $(BUILD) $(4)
TEST_TARGETS += preload-$(1)
endef
$(eval $(call preload_sanitized,tsan,$(TSAN_DIR),$(TSAN_FLAGS),thread))
$(eval $(call preload_sanitized,asan,$(ASAN_DIR),$(ASAN_FLAGS),address))
