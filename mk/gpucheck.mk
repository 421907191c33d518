# make gpu-check: the one prepared run for a machine with an NVIDIA GPU
# (bench/gpu; issue 29). Run it first on any GPU machine.
#
#   make gpu-kit                 on a machine with Go: build everything the
#                                check needs into build/ (copy it over)
#   make gpu-check               on the GPU machine (no Go needed): every part
#                                of GPU_KIT_PARTS, each under its own timeout
#                                (bench/gpu/kit.sh, bench/gpu/parts.sh); one
#                                PASS/FAIL/SKIP line per part, then the total;
#                                exits 1 if any part failed. The tables go to
#                                bench/gpu/RESULTS.md, every log to
#                                bench/gpu/logs/kit/ (a part's directory
#                                holds its latest run; summary.txt every
#                                run's lines)
#   make gpu-check GPU_KIT_PARTS="resnet:240 sdpa:90"
#                                rerun only those parts
#   make gpu-check GPU_KIT_HALF=1, then GPU_KIT_HALF=2
#                                the kit in two calls, for a lent machine
#                                whose commands run 10 minutes at most (on
#                                an H100 the first half's parts took 292 to
#                                294 s; the second's 113 s besides
#                                multiscale and onnxruntime, not yet timed)
#   make gpu-check STANDIN=1     the same on the CPU against the stand-in
#                                libraries (tests/preload): the PyTorch parts
#                                run their stand-in equivalent or SKIP;
#                                results in build/gpu/RESULTS-standin.md
#   make gpu-check-standin       the kit's own tests (bench/gpu/report_test.py,
#                                bench/gpu/kit_test.sh), then the above
#                                (part of make test)
#
# A part is NAME:TIMEOUT_S. The timeouts are each part's bound; on an H100
# the parts before multiscale took 405 s, and multiscale had not finished
# 90 s later (bench/gpu/RESULTS.md, 2026-11-28). enable-default follows resnet,
# whose benchmark-off floor it is judged against.
# onnxruntime SKIPs where onnxruntime-gpu (and onnx, to build its model) is
# not installed: a GPU machine with no network has neither unless copied.

STANDIN ?=
GPU_RESULTS ?= $(if $(filter 1,$(STANDIN)),$(BUILD)/gpu/RESULTS-standin.md,bench/gpu/RESULTS.md)
GPU_KIT_OUT ?= $(if $(filter 1,$(STANDIN)),$(BUILD)/gpu/kit,bench/gpu/logs/kit)
GPU_KIT_PARTS_1 := v7-find:120 v8-check:120 warm-default:120 procs4:120 deterministic:120 resnet:240 \
                   enable-default:120
GPU_KIT_PARTS_2 := multiscale:240 bf16-cl:120 sdpa:90 torch-v7:120 v8-dlopen:90 onnxruntime:90
ifneq ($(filter-out 1 2,$(GPU_KIT_HALF)),)
$(error GPU_KIT_HALF is 1 or 2)
endif
GPU_KIT_PARTS ?= $(if $(GPU_KIT_HALF),$(GPU_KIT_PARTS_$(GPU_KIT_HALF)),$(GPU_KIT_PARTS_1) $(GPU_KIT_PARTS_2))
GPU_KIT := $(LIB) $(PRELOAD_LIB) $(CLI) $(STANDINS)
# What the stand-in equivalents of the PyTorch parts run (enable-default:
# torch_like as a library; v8-dlopen: torch_like_dl, mk/v8fe_dlopen.mk).
GPU_KIT_STANDIN := $(GPU_KIT) $(BUILD)/bench/gpu/v8_check $(BUILD)/tests/v8fe/torch_like $(STANDIN_DIR)/v8_prog \
                   $(BUILD)/tests/v8fe/libtorch_like.so $(BUILD)/tests/v8fe/torch_like_dl

TEST_TARGETS += gpu-check-standin

.PHONY: gpu-kit gpu-check gpu-check-v7 gpu-check-standin
gpu-kit: $(GPU_KIT)

# No prerequisite that Go builds: on the GPU machine build/ is a copy, and
# make must not try to rebuild it (the parts say what is missing). STANDIN=1
# (CI) builds the kit first.
gpu-check: $(if $(filter 1,$(STANDIN)),$(GPU_KIT_STANDIN))
	@mkdir -p $(dir $(GPU_RESULTS)) $(GPU_KIT_OUT); $(if $(filter 1,$(STANDIN)),rm -rf $(GPU_KIT_OUT)/*;) \
	KIT_BUILD=$(BUILD) KIT_STANDIN=$(if $(filter 1,$(STANDIN)),1,0) KIT_RESULTS=$(abspath $(GPU_RESULTS)) \
	  MAKE="$(MAKE)" sh bench/gpu/kit.sh $(GPU_KIT_OUT) $(GPU_KIT_PARTS); rc=$$?; \
	{ echo '```'; cat $(GPU_KIT_OUT)/summary.txt; echo '```'; } > $(GPU_KIT_OUT)/summary.md; \
	python3 bench/gpu/section.py $(GPU_RESULTS) kit $(GPU_KIT_OUT)/summary.md; \
	echo "gpu-check: tables in $(GPU_RESULTS), logs in $(GPU_KIT_OUT)"; exit $$rc

# The v7 find API alone (the v7-find part).
gpu-check-v7:
	$(MAKE) --no-print-directory gpu-check GPU_KIT_PARTS=v7-find:120

# In make test: the bars must fail on bad results and a failing part must
# not stop the next; then the kit runs end to end on the stand-ins.
gpu-check-standin: $(GPU_KIT_STANDIN)
	python3 bench/gpu/report_test.py
	sh bench/gpu/kit_test.sh $(BUILD)
	$(MAKE) --no-print-directory gpu-check STANDIN=1
