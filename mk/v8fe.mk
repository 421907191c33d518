# PyTorch's default convolution path on the REAL cudnn_frontend 1.32 (issue
# 23): tests/v8fe/torch_like, built against NVIDIA's cudnn_frontend and
# cuDNN 9 headers (mk/nvidia.mk) and linked against the stand-in cuDNN, CUDA
# runtime and driver (tests/preload), so it runs on this machine.
#
#   make v8fe-test     torch_like's cold runs without an interposer, each
#                      option and fault: they complete with valid outputs,
#                      and the stand-in's counts are what PyTorch's sequence
#                      gives (tests/v8fe/run.sh); also compiles
#                      examples/pytorch/conv_v8.cpp's cudnn_frontend lines
#   make v8fe-preload-test  torch_like under `convcache run`: the interposer
#                      serves the default path (tests/preload/v8_run.sh: run
#                      2 times one plan per shape; every change run 2 may
#                      bring; single flight; strict, ro, recache, off)
#   make v8fe-hosts-test  hosts beyond PyTorch's sequence (issue 28) on the
#                      real cudnn_frontend's v1 graph API
#                      (tests/v8fe/frontend_hosts: build_plans(ALL) with
#                      Graph::autotune, a host that keeps every plan and
#                      runs the others after its choice, a host that builds
#                      every shape ahead), without and under `convcache
#                      run` (tests/v8fe/hosts_run.sh)
#
# The stand-in CUDA runtime, $(STANDIN_CUDART), is built here too.

STANDIN_CUDART := $(STANDIN_DIR)/libcudart.so.13
V8FE_DIR       := $(BUILD)/tests/v8fe
V8FE_PROG      := $(V8FE_DIR)/torch_like
V8FE_FLAGS      = $(NVIDIA_REAL_CFLAGS) $(NVIDIA_FE_CFLAGS)
# The program calls cuDNN and the CUDA runtime directly (as libtorch_cuda
# does): the stand-ins, found by run path.
V8FE_LINK      := -L$(STANDIN_DIR) -l:libcudnn.so.9 -l:libcudart.so.13 -l:libcuda.so.1 \
                  -Wl,-rpath,$(ABS_BUILD)/tests/preload -ldl -lpthread

TEST_TARGETS   += v8fe-test v8fe-preload-test v8fe-hosts-test

$(STANDIN_CUDART): tests/preload/standin_cudart.c $(STANDIN_DIR)/libcuda.so.1
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -fPIC -shared -Wl,-soname,libcudart.so.13 -o $@ $< \
	  -L$(STANDIN_DIR) -l:libcuda.so.1 -Wl,-rpath,'$$ORIGIN' -ldl -lpthread

# torch_conv.cpp alone includes cudnn_frontend.h (about a minute to
# compile), and the example's plan_from_choice (--rebuild).
$(V8FE_DIR)/torch_conv.o: tests/v8fe/torch_conv.cpp tests/v8fe/torch_conv.hpp tests/v8fe/conv_shapes.hpp \
  examples/pytorch/conv_v8_frontend.hpp include/convcache_engine.h $(NVIDIA_FE_STAMP) $(NVIDIA_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8FE_FLAGS) -Iinclude -Iexamples/pytorch -c -o $@ $<

$(V8FE_DIR)/torch_like.o: tests/v8fe/torch_like.cpp tests/v8fe/torch_conv.hpp tests/v8fe/flag_number.hpp tests/v8fe/conv_shapes.hpp \
  $(NVIDIA_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8FE_FLAGS) -c -o $@ $<

$(V8FE_PROG): $(V8FE_DIR)/torch_like.o $(V8FE_DIR)/torch_conv.o $(STANDINS) $(STANDIN_CUDART)
	$(CXX) $(CXXFLAGS) -o $@ $(V8FE_DIR)/torch_like.o $(V8FE_DIR)/torch_conv.o $(V8FE_LINK)

# torch_like as a library (torch_like_main), linked to the stand-in cuDNN
# as libtorch_cuda.so is to cuDNN, for make gpu-check's enable-default part
# on the stand-ins (bench/gpu/enable_run.py loads it after
# convcache.enable()); its objects again, with -fPIC.
V8FE_LIB := $(V8FE_DIR)/libtorch_like.so

$(V8FE_DIR)/torch_conv_pic.o: tests/v8fe/torch_conv.cpp tests/v8fe/torch_conv.hpp tests/v8fe/conv_shapes.hpp \
  examples/pytorch/conv_v8_frontend.hpp include/convcache_engine.h $(NVIDIA_FE_STAMP) $(NVIDIA_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8FE_FLAGS) -fPIC -Iinclude -Iexamples/pytorch -c -o $@ $<

$(V8FE_DIR)/torch_like_lib.o: bench/gpu/torch_like_lib.cpp tests/v8fe/torch_like.cpp tests/v8fe/torch_conv.hpp tests/v8fe/flag_number.hpp \
  tests/v8fe/conv_shapes.hpp $(NVIDIA_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8FE_FLAGS) -fPIC -Itests/v8fe -c -o $@ $<

$(V8FE_LIB): $(V8FE_DIR)/torch_like_lib.o $(V8FE_DIR)/torch_conv_pic.o $(STANDINS) $(STANDIN_CUDART)
	$(CXX) $(CXXFLAGS) -shared -fPIC -o $@ $(V8FE_DIR)/torch_like_lib.o $(V8FE_DIR)/torch_conv_pic.o $(V8FE_LINK)

# examples/pytorch/conv_v8.cpp's plan_from_choice on cudnn_frontend: the
# lines its patch adds to Conv_v8.cpp, compiled (not run) against the real
# headers.
$(V8FE_DIR)/conv_v8_frontend.o: examples/pytorch/conv_v8.cpp examples/pytorch/conv_v8_frontend.hpp \
  include/convcache_v8.hpp bench/gpu/conv_graph.h examples/pytorch/convolution_params.hpp \
  $(NVIDIA_FE_STAMP) $(NVIDIA_STAMP) $(BUILD)/include/.stamp
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8FE_FLAGS) -DCONVCACHE_EXAMPLE_FRONTEND $(V8_INC) -Iexamples/pytorch -c -o $@ $<

.PHONY: v8fe-test
v8fe-test: $(V8FE_PROG) $(V8FE_DIR)/conv_v8_frontend.o
	$(CXX_CLEAN_ENV) sh tests/v8fe/run.sh $(BUILD)

.PHONY: v8fe-preload-test
v8fe-preload-test: $(V8FE_PROG) $(LIB) $(PRELOAD_LIB) $(BUILD)/convcache
	V8_FILTERS="--deterministic --no-tf32" V8_NO_FORK=1 sh tests/preload/v8_run.sh $(BUILD) torch_like --report $(V8FE_PROG)

# frontend_hosts: fe_graph.cpp alone includes cudnn_frontend.h; the tensors
# are torch_conv.o's; fe_runtime.cpp has the CUDA runtime, NVRTC and cuDNN
# entry points the v1 graph API links to and the stand-ins lack.
V8FE_HOSTS     := $(V8FE_DIR)/frontend_hosts
V8FE_HOSTS_OBJ := $(V8FE_DIR)/frontend_hosts.o $(V8FE_DIR)/fe_graph.o $(V8FE_DIR)/fe_runtime.o $(V8FE_DIR)/torch_conv.o

$(V8FE_DIR)/fe_graph.o: tests/v8fe/fe_graph.cpp tests/v8fe/fe_graph.hpp tests/v8fe/torch_conv.hpp \
  tests/v8fe/conv_shapes.hpp $(NVIDIA_FE_STAMP) $(NVIDIA_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8FE_FLAGS) -c -o $@ $<

$(V8FE_DIR)/frontend_hosts.o: tests/v8fe/frontend_hosts.cpp tests/v8fe/fe_graph.hpp tests/v8fe/torch_conv.hpp tests/v8fe/flag_number.hpp \
  tests/v8fe/conv_shapes.hpp $(NVIDIA_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8FE_FLAGS) -c -o $@ $<

$(V8FE_DIR)/fe_runtime.o: tests/v8fe/fe_runtime.cpp $(NVIDIA_FE_STAMP) $(NVIDIA_STAMP)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) $(V8FE_FLAGS) -c -o $@ $<

$(V8FE_HOSTS): $(V8FE_HOSTS_OBJ) $(STANDINS) $(STANDIN_CUDART)
	$(CXX) $(CXXFLAGS) -o $@ $(V8FE_HOSTS_OBJ) $(V8FE_LINK)

.PHONY: v8fe-hosts-test
v8fe-hosts-test: $(V8FE_HOSTS) $(LIB) $(PRELOAD_LIB) $(BUILD)/convcache
	$(CXX_CLEAN_ENV) sh tests/v8fe/hosts_run.sh $(BUILD)
