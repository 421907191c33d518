# PyTorch's default convolution path: cuDNN backend-API engine choices
# (issue 15). libconvcache_engine (cudnn/engine, include/convcache_engine.h)
# records and rebuilds them; include/convcache_v8.hpp is the drop-in for
# PyTorch's v8 BenchmarkCache; bench/gpu/v8_check.c proves it on a GPU.
#
#   make                    also builds build/libconvcache_engine.{a,so}
#   make v8-test            the tests against the stand-in cuDNN (no GPU)
#   make v8-real-headers    compile the engine code, the drop-in, the example
#                           and the GPU check against them with -Werror
#   make gpu-check-v8       the GPU check (STANDIN=1: on the CPU, stand-in cuDNN);
#                           needs no Go: a build/ made elsewhere will do
#   make bench-v8           the time spent choosing, run 1 vs run 2, on the stand-in

ENGINE_SRC := $(wildcard cudnn/engine/*.c)
ENGINE_HDR := cudnn/engine/engine.h cudnn/engine/backend_api.h include/convcache_engine.h
ENGINE_OBJ := $(patsubst cudnn/engine/%.c,$(BUILD)/engine/%.o,$(ENGINE_SRC))
ENGINE_A   := $(BUILD)/libconvcache_engine.a
ENGINE_SO  := $(BUILD)/libconvcache_engine.so.1
V8_DIR     := $(BUILD)/tests/v8
V8_INC     := -Iinclude -Icudnn/engine -Ibench/gpu -Itests/preload
# A program that calls the stand-in cuDNN directly, as PyTorch calls cuDNN.
V8_STANDIN_LINK := -L$(STANDIN_DIR) -l:libcudnn.so.9 -l:libcuda.so.1 -Wl,-rpath,$(ABS_BUILD)/tests/preload -ldl -lpthread

ALL_TARGETS     += $(ENGINE_A) $(ENGINE_SO)
TEST_TARGETS    += v8-test v8-real-headers
INSTALL_TARGETS += install-engine

$(BUILD)/engine/%.o: cudnn/engine/%.c $(ENGINE_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -Iinclude -Icudnn/engine -c -o $@ $<

$(ENGINE_A): $(ENGINE_OBJ)
	@rm -f $@
	ar rcs $@ $^

# Only convcache_engine_* is exported; no libcudnn in its NEEDED list.
$(ENGINE_SO): $(ENGINE_OBJ) cudnn/engine/exports.map
	$(CC) $(CFLAGS) -shared -Wl,-soname,libconvcache_engine.so.1 \
	  -Wl,--version-script=cudnn/engine/exports.map -o $@ $(ENGINE_OBJ) $(LDFLAGS) -ldl -lpthread
	ln -sf libconvcache_engine.so.1 $(BUILD)/libconvcache_engine.so
	@if readelf -d $@ | grep -q 'libcudnn'; then echo "$@ links cuDNN" >&2; rm -f $@; exit 1; fi

install-engine: $(ENGINE_A) $(ENGINE_SO)
	install -d $(DESTDIR)$(LIBDIR)
	install -m 0644 $(ENGINE_A) $(DESTDIR)$(LIBDIR)/
	install -m 0755 $(ENGINE_SO) $(DESTDIR)$(LIBDIR)/
	ln -sf libconvcache_engine.so.1 $(DESTDIR)$(LIBDIR)/libconvcache_engine.so

# ---- tests against the stand-in ---------------------------------------------

V8_TEST_HDRS := tests/v8/choose.h bench/gpu/conv_graph.h tests/check.h $(ENGINE_HDR) tests/preload/standin_backend.h

$(V8_DIR)/test_engine $(V8_DIR)/test_shared: $(V8_DIR)/%: tests/v8/%.c $(V8_TEST_HDRS) $(ENGINE_A) $(LIB) $(STANDINS) $(BUILD)/include/.stamp
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) $(V8_INC) -o $@ $< $(ENGINE_A) $(V8_STANDIN_LINK) $(LINK_CC)

# The engine code compiled in, against a fake backend (cce_backend_use).
$(V8_DIR)/test_knob_reads: tests/v8/test_knob_reads.c tests/check_plain.h $(ENGINE_SRC) $(ENGINE_HDR)
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Iinclude -Icudnn/engine -o $@ $< $(ENGINE_SRC) -ldl -lpthread

# Linked to nothing but the engine library: no cuDNN in the process.
$(V8_DIR)/test_unavailable: tests/v8/test_unavailable.c $(ENGINE_A) include/convcache_engine.h
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -Iinclude -o $@ $< $(ENGINE_A) -ldl -lpthread

.PHONY: v8-test install-engine
# The example runs as `make test` runs the v7 one: its last line shown, all
# of it when it fails. The stand-in driver and cuDNN give it a device scope.
v8-test: $(V8_DIR)/test_knob_reads $(V8_DIR)/test_engine $(V8_DIR)/test_shared $(V8_DIR)/test_v8 $(V8_DIR)/test_unavailable $(EX_DIR)/pytorch_conv_v8
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; e="$(CXX_CLEAN_ENV) TMPDIR=$$tmp"; \
	last() { "$$@" > $$tmp/out 2>&1 || { cat $$tmp/out >&2; echo "failed: $$*" >&2; exit 1; }; tail -1 $$tmp/out; }; \
	echo "== v8: knob choices read as cuDNN 9 gives them (tests/v8/test_knob_reads.c)"; last $$e $(V8_DIR)/test_knob_reads; \
	echo "== v8: record and rebuild (tests/v8/test_engine.c)"; last $$e $(V8_DIR)/test_engine; \
	echo "== v8: 2 processes x 4 threads share one file (tests/v8/test_shared.c)"; last $$e $(V8_DIR)/test_shared; \
	echo "== v8: the drop-in (tests/v8/test_v8.cpp)"; last $$e $(V8_DIR)/test_v8; \
	echo "== v8: no cuDNN (a missing file; a library without the backend API)"; \
	last $$e CONVCACHE_CUDNN_LIBRARY=$$tmp/none/libcudnn.so.9 $(V8_DIR)/test_unavailable; \
	last $$e CONVCACHE_CUDNN_LIBRARY=libm.so.6 $(V8_DIR)/test_unavailable; \
	echo "== examples/pytorch/conv_v8: a cold process benchmarks, a warm one (1 and 4 threads) rebuilds"; \
	g="CONVCACHE_PATH=$$tmp/ex.ccdb CONVCACHE_CUDA_LIBRARY=$(ABS_BUILD)/tests/preload/libcuda.so.1 \
	   CONVCACHE_CUDNN_LIBRARY=$(ABS_BUILD)/tests/preload/libcudnn.so.9"; \
	last $$e $$g $(EX_DIR)/pytorch_conv_v8 --expect cold; \
	grep -q 'scope "cc1;gpu=Standin GPU 0' $$tmp/out || { cat $$tmp/out >&2; echo "conv_v8: not the device's scope" >&2; exit 1; }; \
	last $$e $$g $(EX_DIR)/pytorch_conv_v8 --expect warm; \
	last $$e $$g $(EX_DIR)/pytorch_conv_v8 --expect warm --threads 4

# ---- NVIDIA's real headers --------------------------------------------------
# v8-real-headers compiles the engine code, the stand-in's backend functions,
# the drop-in with the example, and the GPU check against the real headers
# (fetched by mk/nvidia.mk) with -Werror: with CONVCACHE_REAL_CUDNN,
# cudnn/engine/backend_api.h takes every name from <cudnn.h> and asserts
# each value and function type it would otherwise define.

V8_REAL_C       := $(ENGINE_SRC) $(filter-out tests/preload/standin_cudnn.c,$(STANDIN_CUDNN_SRC)) \
                   tests/preload/standin_cudart.c bench/gpu/v8_check.c $(wildcard tests/v8/*.c)
V8_REAL_CXX     := examples/pytorch/conv_v8.cpp tests/v8/test_v8.cpp
# Compiled to objects (the optimiser's warnings too), -Werror whatever
# CFLAGS says.
V8_REAL_WARN    := -Wall -Wextra -Werror

.PHONY: v8-real-headers
v8-real-headers: $(NVIDIA_STAMP)
	@set -e; for f in $(V8_REAL_C); do echo "== $$f against cuDNN's headers"; \
	  $(CC) $(CFLAGS) $(V8_REAL_WARN) $(NVIDIA_REAL_CFLAGS) $(V8_INC) -c -o /dev/null $$f; done; \
	for f in $(V8_REAL_CXX); do echo "== $$f against cuDNN's headers"; \
	  $(CXX) $(CXXFLAGS) $(V8_REAL_WARN) $(NVIDIA_REAL_CFLAGS) $(V8_INC) -Iexamples/pytorch -c -o /dev/null $$f; done

# ---- the drop-in and the example ---------------------------------------------

$(EX_DIR)/pytorch_conv_v8: examples/pytorch/conv_v8.cpp include/convcache_v8.hpp bench/gpu/conv_graph.h \
  examples/pytorch/convolution_params.hpp \
  $(ENGINE_A) $(LIB) $(STANDINS) $(BUILD)/include/.stamp
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8_INC) -o $@ $< $(ENGINE_A) $(V8_STANDIN_LINK) $(LINK_CC)

$(V8_DIR)/test_v8: tests/v8/test_v8.cpp include/convcache_v8.hpp bench/gpu/conv_graph.h tests/cpp/check.hpp \
  examples/pytorch/convolution_params.hpp \
  $(ENGINE_A) $(LIB) $(STANDINS) $(BUILD)/include/.stamp
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8_INC) -o $@ $< $(ENGINE_A) $(V8_STANDIN_LINK) $(LINK_CC)

# ---- the GPU check (bench/gpu/v8_check.c) ------------------------------------
# It needs gcc, build/libconvcache.so and NVIDIA's libraries (or the
# stand-ins, which it builds with gcc alone): no Go. On a machine with Go,
# make builds the library first; on the GPU machine, copy build/ over.
#
#   make gpu-check-v8              real GPU: cuDNN from $CONVCACHE_CUDNN_LIBRARY,
#                                  else the nvidia-cudnn wheel python3 finds,
#                                  else libcudnn.so.9 on the loader's path
#   make gpu-check-v8 STANDIN=1    the same program on the CPU, stand-in cuDNN
# The table is printed and written to its section of $(GPU_RESULTS) (see
# mk/gpucheck.mk); gpu-check runs this part too.

V8_CHECK       := $(BUILD)/bench/gpu/v8_check
V8_CHECK_OUT   := $(BUILD)/bench/gpu
V8_CHECK_DEPS  := $(if $(shell command -v $(GO) 2>/dev/null),$(LIB))
ifeq ($(STANDIN),1)
V8_CHECK_FLAGS ?= --batch 1 --sizes 128,96,64
V8_CHECK_ENV   := CONVCACHE_CUDA_LIBRARY=$(ABS_BUILD)/tests/preload/libcuda.so.1 \
                  CONVCACHE_CUDNN_LIBRARY=$(ABS_BUILD)/tests/preload/libcudnn.so.9 STANDIN_EXEC_US=100
V8_CHECK_LABEL := stand-in cuDNN on the CPU (tests/preload), not a GPU
V8_CHECK_NEEDS := $(STANDINS)
else
V8_CHECK_FLAGS ?= --batch 16 --sizes 224,192,160
V8_CUDNN_WHEEL  = $(shell python3 -c 'import nvidia.cudnn, os; print(os.path.join(list(nvidia.cudnn.__path__)[0], "lib", "libcudnn.so.9"))' 2>/dev/null)
V8_CHECK_ENV    = $(if $(CONVCACHE_CUDNN_LIBRARY),,$(if $(V8_CUDNN_WHEEL),CONVCACHE_CUDNN_LIBRARY=$(V8_CUDNN_WHEEL)))
V8_CHECK_LABEL := real GPU
V8_CHECK_NEEDS :=
endif

$(V8_CHECK): bench/gpu/v8_check.c bench/gpu/conv_graph.h bench/gpu/cuda_driver.h bench/gpu/plan_reader.h \
  $(ENGINE_SRC) $(ENGINE_HDR) \
  include/convcache.h $(V8_CHECK_DEPS)
	@mkdir -p $(@D)
	@test -e $(BUILD)/libconvcache.so || { echo "$(BUILD)/libconvcache.so is missing: run make on a machine with Go, then copy $(BUILD)/ here" >&2; exit 1; }
	$(CC) $(CFLAGS) $(V8_INC) -o $@ bench/gpu/v8_check.c $(ENGINE_SRC) -L$(BUILD) -lconvcache \
	  -Wl,-rpath,'$$ORIGIN/../..' -ldl -lpthread

.PHONY: gpu-check-v8
gpu-check-v8: $(V8_CHECK) $(V8_CHECK_NEEDS)
	@set -e; mkdir -p $(V8_CHECK_OUT); tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	e="$(CXX_CLEAN_ENV) TMPDIR=$$tmp $(V8_CHECK_ENV)"; \
	$$e $(V8_CHECK) --run 1 --cache $$tmp/v8.ccdb --report $$tmp/run1.txt $(V8_CHECK_FLAGS); \
	$$e $(V8_CHECK) --run 2 --cache $$tmp/v8.ccdb --report $$tmp/run2.txt --compare $$tmp/run1.txt \
	  $(V8_CHECK_FLAGS) --label "$(V8_CHECK_LABEL)" > $$tmp/table.md || { cat $$tmp/table.md; exit 1; }; \
	mkdir -p $(dir $(GPU_RESULTS)); python3 bench/gpu/section.py $(GPU_RESULTS) v8 $$tmp/table.md; \
	cat $$tmp/table.md

# ---- the benchmark row (make bench) ------------------------------------------
# bench/runner runs v8_check on the stand-in: 40 problems, each engine
# config's benchmark sleeping 20 ms in all; run 2's time choosing must be
# <= 1% of run 1's. bench-v8 runs the same pair once, alone.
BENCH_V8 := $(V8_CHECK):$(ABS_BUILD)/tests/preload
bench-table: $(V8_CHECK) $(STANDINS)

.PHONY: bench-v8
bench-v8: $(V8_CHECK) $(STANDINS)
	@set -e; tmp=$$(mktemp -d); trap 'rm -rf $$tmp' EXIT; \
	e="$(CXX_CLEAN_ENV) TMPDIR=$$tmp CONVCACHE_CUDA_LIBRARY=$(ABS_BUILD)/tests/preload/libcuda.so.1 \
	   CONVCACHE_CUDNN_LIBRARY=$(ABS_BUILD)/tests/preload/libcudnn.so.9 STANDIN_EXEC_US=5000"; \
	f="--batch 1 --sizes 64 --limit 40 --cache $$tmp/v8.ccdb"; \
	$$e $(V8_CHECK) --run 1 --report $$tmp/r1 $$f; \
	$$e $(V8_CHECK) --run 2 --report $$tmp/r2 --compare $$tmp/r1 $$f --label "bench-v8, stand-in" | grep '^| all'; \
	awk -F= '/^choosing_ms=/ { v[FILENAME] = $$2 } END { printf "bench-v8: run 1 %.1f ms, run 2 %.2f ms choosing: %.3f%%\n", v[ARGV[1]], v[ARGV[2]], 100 * v[ARGV[2]] / v[ARGV[1]] }' $$tmp/r1 $$tmp/r2
