# The cuDNN LD_PRELOAD interposer (cudnn/preload), and its tests against
# stand-in cuDNN and CUDA driver libraries (tests/preload), which need no GPU.
#
#   make                      also builds build/libconvcache_preload.so
#   make cudnn-test           the interposer and fingerprint tests
#   make install              also installs the interposer into $(LIBDIR)

PRELOAD_LIB := $(BUILD)/libconvcache_preload.so
STANDIN_DIR := $(BUILD)/tests/preload
STANDINS    := $(STANDIN_DIR)/libcuda.so.1 $(STANDIN_DIR)/libcudnn.so.9
PRELOAD_TEST_BINS := $(STANDIN_DIR)/preload_prog $(STANDIN_DIR)/preload_linked \
                     $(STANDIN_DIR)/scope_test
PRELOAD_PROG_SRC  := tests/preload/preload_prog.c tests/preload/planted.c tests/preload/args.c

ALL_TARGETS     += $(PRELOAD_LIB)
TEST_TARGETS    += cudnn-test
INSTALL_TARGETS += install-preload

# Pure C, never linked against libconvcache (it dlopens it on first use) nor
# against cuDNN (it finds the real functions with dlsym). Only the six find
# functions and convcache_preload_stats are exported (-fvisibility=hidden).
PRELOAD_SRC := $(wildcard cudnn/preload/*.c)
$(PRELOAD_LIB): $(PRELOAD_SRC) cudnn/preload/preload.h include/convcache.h
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -fPIC -shared -fvisibility=hidden -Iinclude -o $@ $(PRELOAD_SRC) $(LDFLAGS) -ldl -lpthread

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

$(STANDIN_DIR)/scope_test: tests/preload/scope_test.c $(LIB) $(BUILD)/include/.stamp
	@mkdir -p $(STANDIN_DIR)
	$(CC) $(CFLAGS) -o $@ $< $(LINK_CC)

.PHONY: cudnn-test install-preload
cudnn-test: $(LIB) $(PRELOAD_LIB) $(STANDINS) $(PRELOAD_TEST_BINS) $(BUILD)/convcache
	sh tests/preload/run.sh $(BUILD)

install-preload: $(PRELOAD_LIB)
	install -d $(DESTDIR)$(LIBDIR)
	install -m 0755 $(PRELOAD_LIB) $(DESTDIR)$(LIBDIR)/
