# The cuDNN LD_PRELOAD interposer (cudnn/preload), and its tests against
# stand-in cuDNN and CUDA driver libraries (tests/preload), which need no GPU.
#
#   make                      also builds build/libconvcache_preload.so
#   make cudnn-test           the interposer and fingerprint tests
#   make install              also installs the interposer into $(LIBDIR)

PRELOAD_LIB := $(BUILD)/libconvcache_preload.so
STANDIN_DIR := $(BUILD)/tests/preload
STANDINS    := $(STANDIN_DIR)/libcuda.so.1 $(STANDIN_DIR)/libcudnn.so.9
PRELOAD_TEST_BINS := $(STANDIN_DIR)/preload_prog $(STANDIN_DIR)/scope_test

ALL_TARGETS     += $(PRELOAD_LIB)
TEST_TARGETS    += cudnn-test
INSTALL_TARGETS += install-preload

# Pure C, never linked against libconvcache (it dlopens it on first use) nor
# against cuDNN (it finds the real functions with dlsym).
$(PRELOAD_LIB): cudnn/preload/preload.c include/convcache.h
	@mkdir -p $(BUILD)
	$(CC) $(CFLAGS) -fPIC -shared -fvisibility=hidden -Iinclude -o $@ $< -ldl -lpthread

$(STANDIN_DIR)/libcuda.so.1: tests/preload/standin_cuda.c
	@mkdir -p $(STANDIN_DIR)
	$(CC) $(CFLAGS) -fPIC -shared -Wl,-soname,libcuda.so.1 -o $@ $<

$(STANDIN_DIR)/libcudnn.so.9: tests/preload/standin_cudnn.c $(STANDIN_DIR)/libcuda.so.1
	$(CC) $(CFLAGS) -fPIC -shared -Wl,-soname,libcudnn.so.9 -o $@ $< \
	  -L$(STANDIN_DIR) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN'

$(STANDIN_DIR)/preload_prog: tests/preload/preload_prog.c include/convcache.h $(STANDINS)
	$(CC) $(CFLAGS) -Iinclude -o $@ $< -L$(STANDIN_DIR) -l:libcudnn.so.9 -l:libcuda.so.1 \
	  -Wl,-rpath,'$$ORIGIN' -ldl -lpthread

$(STANDIN_DIR)/scope_test: tests/preload/scope_test.c $(LIB) $(BUILD)/include/.stamp
	@mkdir -p $(STANDIN_DIR)
	$(CC) $(CFLAGS) -o $@ $< $(LINK_CC)

.PHONY: cudnn-test install-preload
cudnn-test: $(LIB) $(PRELOAD_LIB) $(STANDINS) $(PRELOAD_TEST_BINS) $(BUILD)/convcache
	sh tests/preload/run.sh $(BUILD)

install-preload: $(PRELOAD_LIB)
	install -d $(DESTDIR)$(LIBDIR)
	install -m 0755 $(PRELOAD_LIB) $(DESTDIR)$(LIBDIR)/
