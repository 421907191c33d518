# NVIDIA's real packages from PyPI, for the checks that need no GPU: the one
# place that fetches them. Everything is installed under build/ (never into
# the system Python); the downloaded wheels are kept in $(NVIDIA_WHEELS), so
# a second run installs from there without fetching (set NVIDIA_WHEELS to a
# directory outside build/ to keep them across `make clean`).
#
#   make nvidia-cudnn       cuDNN 9 (headers and libraries) and the CUDA 13
#                           headers into $(NVIDIA_SITE) (~520 MB download)
#   make nvidia-frontend    cudnn_frontend 1.32's headers (header-only) and
#                           the CUDA headers they need (cccl's nv/target,
#                           nvrtc.h) into $(NVIDIA_FE_SITE) (~105 MB download)
#   make real-cudnn-check   convcache against the real cuDNN headers and
#                           library (tests/realcudnn/run.sh); part of make test
#   make torch              PyTorch's CUDA wheel and its nvidia-* packages in
#                           a venv, $(TORCH_VENV) (~3 GB download)
#   make torch-check        the interposer under the real PyTorch
#                           (tests/torch/run.sh), and convcache doctor on it
#                           (TestDoctorRealTorch); not part of make test
#
# For code compiled against the real headers: $(NVIDIA_REAL_CFLAGS), after
# a prerequisite on nvidia-cudnn. $(NVIDIA_CUDNN_LIB) holds libcudnn.so.9.
# For code that includes <cudnn_frontend.h>: $(NVIDIA_REAL_CFLAGS)
# $(NVIDIA_FE_CFLAGS), after a prerequisite on $(NVIDIA_FE_STAMP) (which
# orders itself after nvidia-cudnn).

PIP            ?= PIP_ROOT_USER_ACTION=ignore python3 -m pip
NVIDIA_WHEELS  ?= $(BUILD)/wheels
NVIDIA_DIR     := $(BUILD)/nvidia
NVIDIA_SITE    := $(NVIDIA_DIR)/site
# The versions checked against. cuda-runtime brings cuda_runtime_api.h,
# cuda.h and library_types.h (which cudnn_graph.h includes), cuda-crt the
# crt/host_defines.h that cuda_runtime_api.h includes.
NVIDIA_PKGS    := nvidia-cudnn-cu13==9.28.1.4 nvidia-cuda-runtime==13.0.96 nvidia-cuda-crt==13.0.88
NVIDIA_STAMP   := $(NVIDIA_DIR)/.stamp-$(shell echo '$(NVIDIA_PKGS)' | cksum | cut -d' ' -f1)
NVIDIA_CUDNN_INC := $(NVIDIA_SITE)/nvidia/cudnn/include
NVIDIA_CUDA_INC  := $(NVIDIA_SITE)/nvidia/cu13/include
NVIDIA_CUDNN_LIB := $(NVIDIA_SITE)/nvidia/cudnn/lib
NVIDIA_REAL_CFLAGS := -DCONVCACHE_REAL_CUDNN -I$(NVIDIA_CUDNN_INC) -I$(NVIDIA_CUDA_INC)

# cudnn_frontend, header-only (its wheel's include/), and what its headers
# include beyond cuDNN's and the CUDA runtime's: cuda_fp16.h includes
# <nv/target> (cccl); the frontend's runtime-compiled engines include
# <nvrtc.h>. CUDNN_FRONTEND_SKIP_JSON_LIB leaves nlohmann's JSON out.
# -isystem: the frontend's headers do not build with -Wall -Wextra -Werror
# (unused static functions), our code including them must.
NVIDIA_FE_PKGS  := nvidia-cudnn-frontend==1.32.0 nvidia-cuda-cccl==13.0.85 nvidia-cuda-nvrtc==13.0.88
NVIDIA_FE_SITE  := $(NVIDIA_DIR)/fe-site
NVIDIA_FE_STAMP := $(NVIDIA_FE_SITE)/.stamp-$(shell echo '$(NVIDIA_FE_PKGS)' | cksum | cut -d' ' -f1)
NVIDIA_FE_CFLAGS := -DCUDNN_FRONTEND_SKIP_JSON_LIB -isystem $(NVIDIA_FE_SITE)/include \
                    -isystem $(NVIDIA_FE_SITE)/nvidia/cu13/include

TORCH_VERSION  ?= 2.15.0
TORCH_VENV     := $(BUILD)/torch/venv
TORCH_STAMP    := $(TORCH_VENV)/.stamp-torch-$(TORCH_VERSION)

TEST_TARGETS   += real-cudnn-check

# pip_install DIR-ARGS, SPECS: install from the kept wheels; fetch them
# first only when they are not there yet.
define pip_install
$(1) --no-index --find-links $(NVIDIA_WHEELS) $(2) 2>/dev/null || \
  { mkdir -p $(NVIDIA_WHEELS) && $(PIP) download --quiet --only-binary=:all: $(3) -d $(NVIDIA_WHEELS) $(2) && \
    $(1) --no-index --find-links $(NVIDIA_WHEELS) $(2); }
endef

$(NVIDIA_STAMP):
	@rm -rf $(NVIDIA_DIR) && mkdir -p $(NVIDIA_DIR)
	@echo "nvidia: installing $(NVIDIA_PKGS) into $(NVIDIA_SITE)"
	@$(call pip_install,$(PIP) install --quiet --disable-pip-version-check --no-deps --target $(NVIDIA_SITE),$(NVIDIA_PKGS),--no-deps)
	@grep -q '^#define CUDNN_MAJOR 9' $(NVIDIA_CUDNN_INC)/cudnn_version.h
	@test -f $(NVIDIA_CUDA_INC)/cuda_runtime_api.h -a -f $(NVIDIA_CUDA_INC)/crt/host_defines.h -a -f $(NVIDIA_CUDNN_LIB)/libcudnn.so.9
	@touch $@

# Its own directory and stamp: nvidia-cudnn's target stays as it was. Made
# after it (order only), since that one starts by emptying $(NVIDIA_DIR).
$(NVIDIA_FE_STAMP): | $(NVIDIA_STAMP)
	@rm -rf $(NVIDIA_FE_SITE) && mkdir -p $(NVIDIA_FE_SITE)
	@echo "nvidia: installing $(NVIDIA_FE_PKGS) into $(NVIDIA_FE_SITE)"
	@$(call pip_install,$(PIP) install --quiet --disable-pip-version-check --no-deps --target $(NVIDIA_FE_SITE),$(NVIDIA_FE_PKGS),--no-deps)
	@grep -q '^#define CUDNN_FRONTEND_MINOR_VERSION 32' $(NVIDIA_FE_SITE)/include/cudnn_frontend_version.h
	@test -f $(NVIDIA_FE_SITE)/nvidia/cu13/include/nv/target -a -f $(NVIDIA_FE_SITE)/nvidia/cu13/include/nvrtc.h
	@touch $@

$(TORCH_STAMP):
	@rm -rf $(TORCH_VENV) && mkdir -p $(dir $(TORCH_VENV))
	python3 -m venv $(TORCH_VENV)
	@echo "torch: installing torch==$(TORCH_VERSION) (the CUDA wheel and its nvidia-* packages) into $(TORCH_VENV)"
	@$(call pip_install,PIP_ROOT_USER_ACTION=ignore $(TORCH_VENV)/bin/pip install --quiet --disable-pip-version-check,torch==$(TORCH_VERSION),)
	@touch $@

.PHONY: nvidia-cudnn nvidia-headers nvidia-frontend real-cudnn-check torch torch-check
nvidia-cudnn nvidia-headers: $(NVIDIA_STAMP)
nvidia-frontend: $(NVIDIA_FE_STAMP)
torch: $(TORCH_STAMP)

real-cudnn-check: $(NVIDIA_STAMP) $(PRELOAD_LIB) $(CLI) $(STANDIN_DIR)/libcuda.so.1 $(BUILD)/include/.stamp \
  $(BUILD)/bench/v8/libcuda_extra.so
	CC="$(CC)" CXX="$(CXX)" GO="$(GO)" sh tests/realcudnn/run.sh $(BUILD) $(NVIDIA_SITE)

torch-check: $(TORCH_STAMP) $(PRELOAD_LIB) $(LIB) $(CLI)
	sh tests/torch/run.sh $(BUILD) $(TORCH_VENV)
	CONVCACHE_TEST_BUILD=$(ABS_BUILD) CONVCACHE_TEST_TORCH_VENV=$(abspath $(TORCH_VENV)) \
	  $(GO) test -count=1 -run TestDoctorRealTorch -v ./cmd/convcache
