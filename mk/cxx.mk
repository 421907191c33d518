# The C++ interface (include/convcache.hpp and the headers it includes), the run-time loader
# (include/convcache_dynamic.h), the examples, the demo and the installed
# package (CMake config and pkg-config).
#
#   make test       runs cxx-test, examples-test and package-test among the rest
#   make demo       the demo, twice, in demo.ccdb beside the default cache file

CXX_DIR := $(BUILD)/cxx
EX_DIR  := $(BUILD)/examples

# PyTorch's key and value types, shared by the tests, the examples and bench/.
TORCH_TYPES   := examples/pytorch/convolution_params.hpp
CXX_TEST_HDRS := $(BUILD)/include/.stamp tests/cpp/check.hpp tests/tmpdir.h $(TORCH_TYPES)
# Run tests and examples without the caller's CONVCACHE_* settings.
CXX_CLEAN_ENV := env -u CONVCACHE_PATH -u CONVCACHE_SCOPE -u CONVCACHE_MODE -u CONVCACHE_DISABLE \
  -u CONVCACHE_LIBRARY -u CONVCACHE_REMOTE -u CONVCACHE_SYSTEM_PATH -u CONVCACHE_TAG
# No -lconvcache: the dynamic header loads it. -ldl -lpthread for glibc < 2.34.
DYN_LIBS := -ldl -lpthread

CXX_TEST_BINS := $(CXX_DIR)/test_hpp $(CXX_DIR)/test_benchmark $(CXX_DIR)/test_dynamic $(CXX_DIR)/test_hpp_dynamic \
                 $(CXX_DIR)/test_dynamic_libdir $(CXX_DIR)/test_dynamic_reldir
EXAMPLE_BINS  := $(EX_DIR)/pytorch_conv $(EX_DIR)/openvino_executor $(EX_DIR)/c_dynamic $(EX_DIR)/demo

$(CXX_DIR)/test_hpp $(CXX_DIR)/test_benchmark: $(CXX_DIR)/%: tests/cpp/%.cpp $(CXX_TEST_HDRS) $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -o $@ $< $(LINK_CC)

# Built without the library, and checked to have no link-time dependency on it.
define no_libconvcache
	@if readelf -d $@ | grep -q libconvcache; then echo "$@ links libconvcache" >&2; rm -f $@; exit 1; fi
endef

$(CXX_DIR)/test_dynamic: tests/cpp/test_dynamic.c tests/cpp/test_dynamic_tu2.c tests/tmpdir.h $(BUILD)/include/.stamp
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I$(BUILD)/include -o $@ tests/cpp/test_dynamic.c tests/cpp/test_dynamic_tu2.c $(DYN_LIBS)
	$(no_libconvcache)

# The loader with an installation's library directory compiled in, as the
# CMake package and convcache_install.h give it: the build directory
# (absolute), and the same as a relative path, which must never be used.
$(CXX_DIR)/test_dynamic_libdir $(CXX_DIR)/test_dynamic_reldir: $(CXX_DIR)/test_dynamic_%: tests/cpp/test_dynamic.c \
  tests/cpp/test_dynamic_tu2.c tests/tmpdir.h $(BUILD)/include/.stamp
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I$(BUILD)/include -DCONVCACHE_INSTALL_LIBDIR='"$(if $(filter libdir,$*),$(ABS_BUILD),$(BUILD))"' \
	  -o $@ tests/cpp/test_dynamic.c tests/cpp/test_dynamic_tu2.c $(DYN_LIBS)
	$(no_libconvcache)

$(CXX_DIR)/test_hpp_dynamic: tests/cpp/test_hpp_dynamic.cpp $(CXX_TEST_HDRS)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -I$(BUILD)/include -o $@ $< $(DYN_LIBS)
	$(no_libconvcache)

$(EX_DIR)/pytorch_conv: examples/pytorch/conv_cache.cpp $(TORCH_TYPES) $(BUILD)/include/.stamp $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -o $@ $< $(LINK_CC)

$(EX_DIR)/openvino_executor: examples/openvino/executor_cache.cpp $(BUILD)/include/.stamp $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -o $@ $< $(LINK_CC)

$(EX_DIR)/c_dynamic: examples/c_dynamic/main.c $(BUILD)/include/.stamp
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -I$(BUILD)/include -o $@ $< $(DYN_LIBS)
	$(no_libconvcache)

$(EX_DIR)/demo: examples/demo/demo.cpp examples/demo/kernels.hpp examples/demo/networks.hpp \
                examples/demo/cudnn_find.hpp $(TORCH_TYPES) $(BUILD)/include/.stamp $(LIB)
	@mkdir -p $(@D)
	$(CXX) $(CXXFLAGS) -o $@ $< $(LINK_CC) -ldl

.PHONY: cxx-test examples-test package-test cmake-test

# Each recipe runs in a fresh temporary directory, $$tmp, removed when the
# recipe ends, whether it passed, failed or was interrupted.
MK_TMPDIR = tmp=$$(mktemp -d -t convcache-mk.XXXXXX); trap 'rm -rf "$$tmp"' EXIT; \
  trap 'exit 130' INT; trap 'exit 143' TERM; trap 'exit 129' HUP

cxx-test: $(CXX_TEST_BINS) $(LIB)
	@set -e; $(MK_TMPDIR); export TMPDIR=$$tmp; e="$(CXX_CLEAN_ENV)"; \
	echo "== test_hpp"; $$e TMPDIR=$$tmp $(CXX_DIR)/test_hpp; \
	echo "== test_benchmark"; $$e TMPDIR=$$tmp $(CXX_DIR)/test_benchmark; \
	echo "== test_dynamic (library present by CONVCACHE_LIBRARY, by LD_LIBRARY_PATH; missing; missing and disabled; not convcache)"; \
	$$e CONVCACHE_LIBRARY=$(ABS_BUILD)/libconvcache.so.1 $(CXX_DIR)/test_dynamic present; \
	$$e LD_LIBRARY_PATH=$(ABS_BUILD) $(CXX_DIR)/test_dynamic present; \
	$$e CONVCACHE_LIBRARY=$$tmp/none/libconvcache.so.1 $(CXX_DIR)/test_dynamic absent; \
	$$e CONVCACHE_LIBRARY=$$tmp/none/libconvcache.so.1 CONVCACHE_DISABLE=1 $(CXX_DIR)/test_dynamic quiet; \
	$$e CONVCACHE_LIBRARY=libm.so.6 $(CXX_DIR)/test_dynamic foreign; \
	echo "== test_dynamic with an installation's directory (found with no environment; CONVCACHE_LIBRARY still rules; a relative one is never used)"; \
	$$e $(CXX_DIR)/test_dynamic_libdir present; \
	$$e CONVCACHE_LIBRARY=$$tmp/none/libconvcache.so.1 $(CXX_DIR)/test_dynamic_libdir absent; \
	test -f $(BUILD)/libconvcache.so.1; $$e $(CXX_DIR)/test_dynamic_reldir relative; \
	echo "== test_hpp_dynamic"; \
	$$e CONVCACHE_LIBRARY=$(ABS_BUILD)/libconvcache.so.1 $(CXX_DIR)/test_hpp_dynamic present; \
	$$e CONVCACHE_LIBRARY=$$tmp/none/libconvcache.so.1 $(CXX_DIR)/test_hpp_dynamic absent 2>/dev/null

# last RUN...: runs a program, shows its last line, and shows all of it and
# fails if it fails.
examples-test: $(EXAMPLE_BINS) $(LIB) $(STANDINS)
	@set -e; $(MK_TMPDIR); e="$(CXX_CLEAN_ENV) TMPDIR=$$tmp CONVCACHE_PATH=$$tmp/examples.ccdb"; \
	last() { "$$@" > $$tmp/out 2>&1 || { cat $$tmp/out >&2; echo "failed: $$*" >&2; exit 1; }; tail -1 $$tmp/out; }; \
	echo "== examples/pytorch: DDP rank on device 3 benchmarks; device 0 (same GPU model) hits; device 5 (another model) benchmarks"; \
	last $$e $(EX_DIR)/pytorch_conv --simulated-gpus --device 3 --expect cold; \
	last $$e $(EX_DIR)/pytorch_conv --simulated-gpus --device 0 --expect warm; \
	last $$e $(EX_DIR)/pytorch_conv --simulated-gpus --device 5 --expect cold; \
	echo "== examples/openvino: 4 streams build each shape once; a second process builds nothing"; \
	last $$e $(EX_DIR)/openvino_executor --expect cold; \
	last $$e $(EX_DIR)/openvino_executor --expect warm; \
	echo "== examples/c_dynamic: with the library (twice), then without it"; \
	last $$e LD_LIBRARY_PATH=$(ABS_BUILD) $(EX_DIR)/c_dynamic; \
	last $$e LD_LIBRARY_PATH=$(ABS_BUILD) $(EX_DIR)/c_dynamic; \
	grep -q "^0 of 3 problems tuned" $$tmp/out || { echo "c_dynamic: the second run tuned again" >&2; exit 1; }; \
	last $$e CONVCACHE_LIBRARY=$$tmp/none.so $(EX_DIR)/c_dynamic; \
	grep -q "running without the cache" $$tmp/out && grep -q "^3 of 3 problems tuned" $$tmp/out \
	  || { echo "c_dynamic: without the library it should warn once and tune" >&2; exit 1; }; \
	echo "== examples/demo: kernels agree; a quick workload twice (the second run benchmarks nothing)"; \
	last $(EX_DIR)/demo --self-test; \
	last $$e $(EX_DIR)/demo --quick --cold --report $$tmp/demo1.txt; \
	last $$e $(EX_DIR)/demo --quick --run 2 --compare $$tmp/demo1.txt; \
	echo "== examples/demo: the cuDNN path, against the stand-in cuDNN and driver (tests/preload)"; \
	g="CONVCACHE_CUDA_LIBRARY=$(ABS_BUILD)/tests/preload/libcuda.so.1 CONVCACHE_CUDNN_LIBRARY=$(ABS_BUILD)/tests/preload/libcudnn.so.9"; \
	last $$e $$g $(EX_DIR)/demo --quick --cold --report $$tmp/gpu1.txt; \
	grep -q "cuDNN's find ran [1-9][0-9]* times" $$tmp/out && grep -q "scope:      cc1;gpu=Standin GPU 0" $$tmp/out \
	  || { cat $$tmp/out >&2; echo "demo: run 1 did not use cuDNN's find" >&2; exit 1; }; \
	last $$e $$g $(EX_DIR)/demo --quick --run 2 --compare $$tmp/gpu1.txt; \
	grep -q "cuDNN's find ran 0 times" $$tmp/out || { cat $$tmp/out >&2; echo "demo: run 2 called cuDNN's find" >&2; exit 1; }; \
	echo "== make demo: in its own file beside the default one, which it leaves alone; counts that agree"; \
	$(CXX_CLEAN_ENV) HOME=$$tmp/home sh tests/demo/check.sh "$(MAKE) --no-print-directory -s demo DEMO_FLAGS=--quick" $$tmp/home/.cache/convcache

TEST_TARGETS += cxx-test examples-test package-test cmake-test

# The main job: a varying-shape workload, twice, in a file of its own
# beside the default cache file (demo.ccdb: the demo's entries never mix
# with a program's). The first run starts from no file, so that the
# comparison holds however often `make demo` has run before. DEMO_FLAGS
# adds options (examples-test: --quick).
DEMO_RUN = $(EX_DIR)/demo --demo-file $(DEMO_FLAGS)
demo: $(EX_DIR)/demo
	@mkdir -p $(BUILD)/demo
	@$(DEMO_RUN) --fresh --run 1 --report $(BUILD)/demo/run1.txt
	@$(DEMO_RUN) --run 2 --report $(BUILD)/demo/run2.txt --compare $(BUILD)/demo/run1.txt

# ---- the installed package: CMake config files beside convcache.pc ---------

CMAKE_PKG_DIR := $(LIBDIR)/cmake/convcache
INSTALL_TARGETS += install-cmake-package

.PHONY: install-cmake-package
install-cmake-package:
	install -d $(DESTDIR)$(CMAKE_PKG_DIR)
	sed -e 's|@CONVCACHE_LIBDIR@|$(LIBDIR)|g' -e 's|@CONVCACHE_INCDIR@|$(INCDIR)|g' \
	    -e 's|@CONVCACHE_VERSION@|$(VERSION)|g' -e 's|@CONVCACHE_VERSION_MAJOR@|$(VERSION_MAJOR)|g' \
	    cmake/convcacheConfig.cmake.in > $(DESTDIR)$(CMAKE_PKG_DIR)/convcacheConfig.cmake
	sed -e 's|@CONVCACHE_VERSION@|$(VERSION)|g' \
	    cmake/convcacheConfigVersion.cmake.in > $(DESTDIR)$(CMAKE_PKG_DIR)/convcacheConfigVersion.cmake

# Installs into a temporary prefix, then builds and runs a consumer found by
# find_package(convcache CONFIG) and one built with pkg-config's flags; then
# runs docs/install.md's install example as printed (tests/infra/readme-install.sh).
package-test: $(LIB) $(BUILD)/include/.stamp
	@set -e; $(MK_TMPDIR); \
	echo "== package: make install PREFIX=$$tmp/prefix"; \
	$(MAKE) --no-print-directory -s install PREFIX=$$tmp/prefix >/dev/null; \
	$(CXX_CLEAN_ENV) TMPDIR=$$tmp sh tests/cpp/consumer/run.sh $$tmp/prefix $$tmp/work; \
	$(CXX_CLEAN_ENV) sh tests/infra/readme-install.sh

# CMakeLists.txt end to end: configure, build (the go build and the tests),
# run a quick subset with ctest (make test runs the full C suite already;
# test_api runs its own binary as nobody, hence no TMPDIR and chmod 755),
# install, check that make install installs the same files
# (tests/infra/install-compare.sh), and build the consumers against the
# CMake installation.
cmake-test: $(LIB)
	@set -e; $(MK_TMPDIR); chmod 755 $$tmp; \
	echo "== cmake: configure, build, ctest, install, consumers of the installed package"; \
	{ cmake -S . -B $$tmp/build -DCMAKE_BUILD_TYPE=Release && cmake --build $$tmp/build -j2; } \
	  > $$tmp/build.log 2>&1 || { cat $$tmp/build.log >&2; exit 1; }; \
	(cd $$tmp/build && $(CXX_CLEAN_ENV) ctest --output-on-failure \
	  -R '^(exports|test_api|test_hpp|test_benchmark|test_dynamic_present|test_dynamic_absent)$$' > $$tmp/ctest.log 2>&1) \
	  || { cat $$tmp/ctest.log >&2; exit 1; }; \
	grep "tests passed" $$tmp/ctest.log; \
	cmake --install $$tmp/build --prefix $$tmp/prefix > /dev/null; \
	$(MAKE) --no-print-directory -s install PREFIX=$$tmp/make-prefix > /dev/null; \
	sh tests/infra/install-compare.sh $$tmp/make-prefix $$tmp/prefix; \
	$(CXX_CLEAN_ENV) TMPDIR=$$tmp sh tests/cpp/consumer/run.sh $$tmp/prefix $$tmp/work
