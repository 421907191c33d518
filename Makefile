# convcache: build, test, benchmark and install.
#
#   make            build/libconvcache.so and build/include/
#   make test       Go tests (with -race) and C/C++ tests against the built library,
#                   in one temporary directory, then the leftover check
#   make test-repeat N=20  the whole suite N times, each in a fresh clone of HEAD
#   make demo       the main job, run twice, in demo.ccdb beside the default cache file
#   make bench      the benchmark table
#   make install PREFIX=/usr/local
#   make wheel      dist/convcache-VERSION-py3-none-PLATFORM.whl (mk/wheel.mk)
#
# Each part of the project adds its targets in mk/*.mk by appending to the
# lists below.

PREFIX  ?= /usr/local
LIBDIR  ?= $(PREFIX)/lib
INCDIR  ?= $(PREFIX)/include
BINDIR  ?= $(PREFIX)/bin
GO      ?= go
CC      ?= gcc
CXX     ?= g++
CFLAGS  ?= -O2 -g -Wall -Wextra -Werror
CXXFLAGS ?= -O2 -g -Wall -Wextra -Werror -std=c++17
BUILD   := build
ABS_BUILD := $(abspath $(BUILD))

VERSION_MAJOR := $(shell sed -n 's/^\#define CONVCACHE_VERSION_MAJOR \([0-9]*\).*/\1/p' include/convcache.h)
VERSION       := $(shell sed -n 's/^\#define CONVCACHE_VERSION_STRING "\(.*\)"/\1/p' include/convcache.h)

LIB       := $(BUILD)/libconvcache.so
LIB_REAL  := $(LIB).$(VERSION)
LIB_MAJOR := $(LIB).$(VERSION_MAJOR)
HEADERS   := $(wildcard include/*.h include/*.hpp)
GO_SRC    := $(shell find cache lock capi internal cudnn remote -name '*.go' -o -name '*.c' -o -name '*.h' -o -name '*.map' 2>/dev/null) go.mod go.sum

# Link a test or example against the built library.
LINK_CC := -I$(BUILD)/include -L$(BUILD) -lconvcache -Wl,-rpath,$(ABS_BUILD) -lpthread

ALL_TARGETS     := $(LIB) $(BUILD)/include/.stamp
TEST_TARGETS    :=
BENCH_TARGETS   :=
INSTALL_TARGETS :=
CLEAN_FILES     :=

.PHONY: all test test-suite test-repeat go-test c-test bench demo install clean fmt vet
all: lib

# Prerequisites: checked before anything runs, for what the goals need, with
# the one apt-get line that installs what is missing (tests/infra/prereqs.sh).
# Sub-makes and test-repeat's runs inherit CONVCACHE_PREREQS and skip it.
ifeq ($(CONVCACHE_PREREQS),)
prereq_goals := $(or $(MAKECMDGOALS),all)
# gpu-check runs on a GPU machine with no Go, from a copied build/ (the
# stand-in mode, STANDIN=1, builds the kit first and needs the build set).
no_build_goals := clean fmt $(if $(filter 1,$(STANDIN)),,gpu-check gpu-check-v7 gpu-check-v8)
prereq_sets := $(if $(filter-out $(no_build_goals),$(prereq_goals)),build) \
  $(if $(filter %test test-% torture%,$(prereq_goals)),cxx test) \
  $(if $(filter bench bench-%,$(prereq_goals)),cxx bench) \
  $(if $(filter demo,$(prereq_goals)),cxx) \
  $(if $(filter wheel-test,$(prereq_goals)),cxx test) \
  $(if $(and $(filter wheel%,$(prereq_goals)),$(filter command line,$(origin ARCH)),$(filter aarch64,$(ARCH)),$(filter-out aarch64,$(shell uname -m))),wheel-aarch64)
ifneq ($(strip $(prereq_sets)),)
ifneq ($(shell sh tests/infra/prereqs.sh $(sort $(prereq_sets)) >&2 && echo ok),ok)
$(error missing prerequisites: see above)
endif
endif
export CONVCACHE_PREREQS := checked
endif

include $(sort $(wildcard mk/*.mk))

all: $(ALL_TARGETS)
lib: $(LIB) $(BUILD)/include/.stamp

$(LIB_REAL): $(GO_SRC)
	@mkdir -p $(BUILD)
	CGO_ENABLED=1 $(GO) build -buildmode=c-shared -trimpath \
	  -ldflags "-extldflags '-Wl,--version-script=$(abspath capi/exports.map) -Wl,-soname,libconvcache.so.$(VERSION_MAJOR) -Wl,-z,nodelete'" \
	  -o $@ ./capi
	@rm -f $(basename $@).h $@.h
	@# The contract is include/convcache.h; check nothing else is exported.
	@bad=$$(nm -D --defined-only $@ | awk '{print $$3}' | grep -v '^convcache_' || true); \
	  if [ -n "$$bad" ]; then echo "unexpected exported symbols: $$bad" >&2; rm -f $@; exit 1; fi

$(LIB_MAJOR): $(LIB_REAL)
	ln -sf $(notdir $<) $@
$(LIB): $(LIB_MAJOR)
	ln -sf $(notdir $<) $@

$(BUILD)/include/.stamp: $(HEADERS)
	@mkdir -p $(BUILD)/include
	cp $(HEADERS) $(BUILD)/include/
	@touch $@

# One temporary directory for the whole run (TMPDIR), removed even on
# failure or Ctrl-C, then the leftover check (tests/infra/run-tests.sh).
test:
	@sh tests/infra/run-tests.sh $(MAKE) --no-print-directory test-suite

test-suite: go-test c-test $(TEST_TARGETS)

# The whole suite N times, each run in a fresh clone of HEAD (uncommitted
# files stay out); the logs of failed runs are kept in build/test-repeat/.
N ?= 20
test-repeat:
	@sh tests/infra/test-repeat.sh $(N)

go-test:
	$(GO) vet ./...
	$(GO) test -race -count=1 -timeout 600s ./...

install: all $(INSTALL_TARGETS)
	install -d $(DESTDIR)$(LIBDIR) $(DESTDIR)$(INCDIR) $(DESTDIR)$(LIBDIR)/pkgconfig
	install -m 0755 $(LIB_REAL) $(DESTDIR)$(LIBDIR)/
	ln -sf $(notdir $(LIB_REAL)) $(DESTDIR)$(LIBDIR)/libconvcache.so.$(VERSION_MAJOR)
	ln -sf libconvcache.so.$(VERSION_MAJOR) $(DESTDIR)$(LIBDIR)/libconvcache.so
	install -m 0644 $(HEADERS) $(DESTDIR)$(INCDIR)/
	@# Where convcache_dynamic.h's loader finds this installation's library.
	@mkdir -p $(BUILD) && sh mk/install-header.sh $(LIBDIR) cmake/convcache_install.h.in > $(BUILD)/convcache_install.h
	install -m 0644 $(BUILD)/convcache_install.h $(DESTDIR)$(INCDIR)/
	rpath=$$(sh mk/ldconfig.sh pc-rpath $(LIBDIR)); \
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@INCDIR@|$(INCDIR)|g' \
	    -e 's|@VERSION@|$(VERSION)|g' -e "s|@RPATH@|$$rpath|g" convcache.pc.in > $(DESTDIR)$(LIBDIR)/pkgconfig/convcache.pc
	@# ldconfig, or what to do instead (mk/ldconfig.sh); cmake --install does the same.
	@sh mk/ldconfig.sh after-install $(LIBDIR) $(DESTDIR)

bench: all $(BENCH_TARGETS)

fmt:
	gofmt -l -w $$(git ls-files '*.go')

clean:
	rm -rf $(BUILD) $(CLEAN_FILES)
