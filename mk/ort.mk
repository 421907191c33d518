# make ort-check: the interposer's dlsym against the real ONNX Runtime
# (onnxruntime-gpu 1.31, the CUDA provider, which opens cuDNN with dlopen
# and takes its functions with dlsym) and the real libcudnn.so.9
# (nvidia-cudnn-cu13, mk/nvidia.mk); no GPU needed (tests/ort/run.sh). Not
# part of make test: onnxruntime-gpu is a 250 MB download, kept in
# $(NVIDIA_WHEELS) and installed under build/ (pip --target, no
# dependencies: nothing here imports it).

ORT_VERSION := 1.31.1
ORT_SITE    := $(BUILD)/ort/site
ORT_STAMP   := $(ORT_SITE)/.stamp-$(ORT_VERSION)

$(ORT_STAMP):
	@rm -rf $(ORT_SITE) && mkdir -p $(ORT_SITE)
	@echo "ort: installing onnxruntime-gpu==$(ORT_VERSION) into $(ORT_SITE)"
	@$(call pip_install,$(PIP) install --quiet --disable-pip-version-check --no-deps --target $(ORT_SITE),onnxruntime-gpu==$(ORT_VERSION),--no-deps)
	@test -f $(ORT_SITE)/onnxruntime/capi/libonnxruntime_providers_cuda.so
	@touch $@

.PHONY: ort ort-check
ort: $(ORT_STAMP)

ort-check: $(ORT_STAMP) $(NVIDIA_STAMP) $(PRELOAD_LIB) $(LIB) $(CLI) $(STANDIN_DIR)/dlsym_exact
	sh tests/ort/run.sh $(BUILD) $(ORT_SITE) $(NVIDIA_CUDNN_LIB)
