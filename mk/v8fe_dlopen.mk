# cudnn_frontend's dynamic loading: a program that opens cuDNN with dlopen
# and takes its functions with dlsym (the interposer's dlsym:
# cudnn/preload/dlsym.c).
#
#   make v8fe-dl-test   the REAL cudnn_frontend 1.32 with dynamic loading
#                       (NV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING: every cuDNN
#                       function through dlsym) running PyTorch's benchmark
#                       sequence against the stand-in cuDNN under `convcache
#                       run`: run 2 builds and times one plan per shape with
#                       run 1's choices and outputs (tests/preload/v8_run.sh,
#                       as make v8fe-preload-test does linked); part of make
#                       test
#   make dlopen-clients the programs that take cuDNN with dlsym, for make
#                       gpu-check's stand-in parts: torch_like_dl (above)
#                       and dlopen_prog (tests/preload/dlopen_shim.c)
#
# The stand-in cuDNN (tests/preload) and NVIDIA's headers (mk/nvidia.mk);
# make ort-check (mk/ort.mk) is the same mechanism against the real ONNX
# Runtime and cuDNN.

V8FE_DL_PROG := $(V8FE_DIR)/torch_like_dl
V8FE_DL_FLAGS = $(V8FE_FLAGS) -DNV_CUDNN_FRONTEND_USE_DYNAMIC_LOADING

TEST_TARGETS += v8fe-dl-test

$(V8FE_DIR)/torch_conv_dl.o: tests/v8fe/torch_conv.cpp tests/v8fe/torch_conv.hpp tests/v8fe/conv_shapes.hpp \
  examples/pytorch/conv_v8_frontend.hpp include/convcache_engine.h $(NVIDIA_FE_STAMP) $(NVIDIA_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8FE_DL_FLAGS) -Iinclude -Iexamples/pytorch -c -o $@ $<

$(V8FE_DIR)/torch_like_dl.o: tests/v8fe/torch_like.cpp tests/v8fe/torch_conv.hpp tests/v8fe/flag_number.hpp tests/v8fe/conv_shapes.hpp \
  $(NVIDIA_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8FE_DL_FLAGS) -c -o $@ $<

$(V8FE_DIR)/dynamic_load.o: tests/v8fe/dynamic_load.cpp $(NVIDIA_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8FE_DL_FLAGS) -c -o $@ $<

# No cuDNN, no CUDA runtime: the run path only tells dlopen where the
# stand-ins are.
$(V8FE_DL_PROG): $(V8FE_DIR)/torch_like_dl.o $(V8FE_DIR)/torch_conv_dl.o $(V8FE_DIR)/dynamic_load.o \
  $(STANDINS) $(STANDIN_CUDART)
	$(CXX) $(CXXFLAGS) -o $@ $(V8FE_DIR)/torch_like_dl.o $(V8FE_DIR)/torch_conv_dl.o $(V8FE_DIR)/dynamic_load.o \
	  -Wl,-rpath,$(ABS_BUILD)/tests/preload -ldl -lpthread
	@if readelf -d $@ | grep -q 'NEEDED.*lib\(cudnn\|cudart\|cuda\)'; then \
	  echo "$@ links cuDNN or CUDA; it must load them with dlopen" >&2; rm -f $@; exit 1; fi

.PHONY: v8fe-dl-test
v8fe-dl-test: $(V8FE_DL_PROG) $(LIB) $(PRELOAD_LIB) $(BUILD)/convcache
	V8_FILTERS="--deterministic --no-tf32" V8_NO_FORK=1 sh tests/preload/v8_run.sh $(BUILD) torch_like_dl --report $(V8FE_DL_PROG)

.PHONY: dlopen-clients
dlopen-clients: $(V8FE_DL_PROG) $(STANDIN_DIR)/dlopen_prog
