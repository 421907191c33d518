# Benchmarks: `make bench` builds one worker per implementation, runs every
# workload against each (bench/runner), prints the Markdown table and writes
# build/bench/results.{md,json}, summary.md (the README's short table) and
# the PNG plots (bench/plot).
#
#   make bench                      the full run (about 4 minutes on 2 cores;
#                                   docs/performance.md has the last run's time)
#   make bench BENCH_FLAGS=-quick   a smoke run (1, 10k and 100k, one repeat; about a minute):
#                                   no 1M-entry figures, so the targets on them
#                                   print PENDING
#   make bench-go                   the Go benchmarks of package cache
#   make bench-test                 vet and test bench/'s Go module (runner, plot)
#
# The load rows add a 1-entry store (the floor a cold first answer is judged
# against, issue 17); the targets (bench/runner/targets.go) print HOLDS,
# MISSED or PENDING for each bar, from this run's medians.

BENCH_DIR   := $(BUILD)/bench
BENCH_FLAGS ?=
BENCH_HDRS  := bench/common.hpp bench/workloads.hpp bench/torch_map.hpp bench/convcache_prep.hpp \
               examples/pytorch/convolution_params.hpp

# (b) needs the C++ drop-in header; it joins the run once the header exists.
BENCH_WORKERS := cabi stdmap naive sqlite
ifneq ($(wildcard include/convcache.hpp),)
BENCH_WORKERS += dropin
endif
bench_empty :=
bench_space := $(bench_empty) $(bench_empty)
bench_comma := ,
BENCH_BINS := $(addprefix $(BENCH_DIR)/bench_,$(BENCH_WORKERS))

$(BENCH_DIR)/bench_cabi $(BENCH_DIR)/bench_dropin: $(BENCH_DIR)/bench_%: bench/impl_%.cpp $(BENCH_HDRS) $(LIB) $(BUILD)/include/.stamp
	@mkdir -p $(BENCH_DIR)
	$(CXX) $(CXXFLAGS) -o $@ $< $(LINK_CC)

$(BENCH_DIR)/bench_stdmap $(BENCH_DIR)/bench_naive: $(BENCH_DIR)/bench_%: bench/impl_%.cpp $(BENCH_HDRS)
	@mkdir -p $(BENCH_DIR)
	$(CXX) $(CXXFLAGS) -o $@ $< -lpthread

$(BENCH_DIR)/bench_sqlite: bench/impl_sqlite.cpp $(BENCH_HDRS)
	@mkdir -p $(BENCH_DIR)
	$(CXX) $(CXXFLAGS) -o $@ $< -lsqlite3 -lpthread

# bench/runner and bench/plot are a Go module of their own (bench/go.mod),
# so that the plotting library stays out of the library's go.mod; the Go
# module proxy supplies it on the first build. They share the results file's
# schema and statistics (bench/internal/results). bench-test vets and tests
# the module (the root's go vet ./... and go test ./... leave it out).
BENCH_MOD := bench/go.mod bench/go.sum $(wildcard bench/internal/results/*.go)

$(BENCH_DIR)/runner: $(wildcard bench/runner/*.go)
$(BENCH_DIR)/plot: $(wildcard bench/plot/*.go)
$(BENCH_DIR)/runner $(BENCH_DIR)/plot: $(BENCH_DIR)/%: $(BENCH_MOD)
	@mkdir -p $(BENCH_DIR)
	cd bench && $(GO) build -o $(abspath $@) ./$*

.PHONY: bench-test
bench-test:
	cd bench && $(GO) vet ./... && $(GO) test -count=1 ./...

# The demo workload (examples/demo, built by mk/cxx.mk) adds the cold vs warm
# rows when it is in the tree; mk/v8.mk sets BENCH_V8 (the v8 engine-choice
# table) and adds its prerequisites to bench-table.
BENCH_DEMO := $(if $(wildcard examples/demo/demo.cpp),$(BUILD)/examples/demo)

.PHONY: bench-table bench-go
bench-table: $(BENCH_BINS) $(BENCH_DIR)/runner $(BENCH_DIR)/plot $(BENCH_DEMO)
	$(BENCH_DIR)/runner -bin $(BENCH_DIR) -out $(BENCH_DIR) -impls $(subst $(bench_space),$(bench_comma),$(strip $(BENCH_WORKERS))) $(if $(BENCH_DEMO),-demo $(BENCH_DEMO)) $(if $(BENCH_V8),-v8 $(BENCH_V8)) $(BENCH_FLAGS)
	$(BENCH_DIR)/plot -in $(BENCH_DIR)/results.json -out $(BENCH_DIR)

# Go benchmarks: find/insert/load/save over sizes and goroutines.
bench-go:
	$(GO) test -run '^$$' -bench . -benchmem -count 1 -timeout 1800s ./cache

BENCH_TARGETS += bench-table

# Publish the last make bench run: bench/results/, the full table and
# targets in docs/performance.md, the summary in README.md (bench/publish.py).
.PHONY: bench-publish
bench-publish:
	python3 bench/publish.py $(BENCH_DIR)
TEST_TARGETS += bench-test
