# make gpu-check: one command for a machine with an NVIDIA GPU (bench/gpu).
#
#   make gpu-kit                 on a machine with Go: build everything the
#                                check needs into build/ (copy it over)
#   make gpu-check               on the GPU machine (no Go needed): the
#                                cuDNN v7 find API under the interposer,
#                                PyTorch's training step, and engine choices
#                                stored and rebuilt on the backend API (v8,
#                                mk/v8.mk); writes the tables to
#                                bench/gpu/RESULTS.md
#   make gpu-check STANDIN=1     the same on the CPU against the stand-in
#                                libraries; the table goes to
#                                build/gpu/RESULTS-standin.md
#   make gpu-check-standin       report.py's own tests, then the above (part
#                                of make test)
#
# gpu-check runs each part named in GPU_CHECK_PARTS. Each part gets STANDIN
# and writes its own section of the results file (bench/gpu/section.py).

STANDIN ?=
GPU_RESULTS ?= $(if $(filter 1,$(STANDIN)),$(BUILD)/gpu/RESULTS-standin.md,bench/gpu/RESULTS.md)
GPU_CHECK_PARTS += gpu-check-v7 gpu-check-v8
GPU_KIT := $(LIB) $(PRELOAD_LIB) $(CLI) $(STANDINS)

TEST_TARGETS += gpu-check-standin

.PHONY: gpu-kit gpu-check gpu-check-v7 gpu-check-standin
gpu-kit: $(GPU_KIT)

# No prerequisite that Go builds: on the GPU machine build/ is a copy, and
# make must not try to rebuild it (run.sh says what is missing). STANDIN=1
# (CI) builds the kit first.
gpu-check: $(if $(filter 1,$(STANDIN)),gpu-kit) $(GPU_CHECK_PARTS)

gpu-check-v7: $(if $(filter 1,$(STANDIN)),gpu-kit)
	@mkdir -p $(dir $(GPU_RESULTS))
	sh bench/gpu/run.sh $(BUILD) $(if $(filter 1,$(STANDIN)),1,0) $(GPU_RESULTS)

# In make test: report.py's checks must fail on bad results, then the kit
# runs end to end on the stand-ins.
gpu-check-standin:
	python3 bench/gpu/report_test.py
	$(MAKE) --no-print-directory gpu-check STANDIN=1
