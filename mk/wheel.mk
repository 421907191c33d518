# The wheel: `pip install convcache-VERSION-py3-none-PLATFORM.whl` gives the
# convcache command, libconvcache.so.1, the cuDNN interposer, the
# engine-choice library, the headers, the CMake package and the pkg-config
# file, and the Python package convcache (python/convcache), with no
# network, no Go and no compiler. wheel/build_wheel.py says what is where.
#
#   make wheel                  into $(DIST)/ (dist/), for this machine
#   make wheel ARCH=aarch64     cross-built with Debian's aarch64 toolchain
#                               (apt-get install gcc-aarch64-linux-gnu)
#   make wheel-test             builds it into build/, installs it in a fresh
#                               venv without network and uses it
#                               (tests/wheel/run.sh); part of make test
#   make wheel-test ARCH=aarch64   the same under qemu-user (apt-get install
#                               qemu-user g++-aarch64-linux-gnu); .ci/run
#
# glibc floor: 2.17 (manylinux2014), for both architectures. The wheel's
# binaries are built apart from make's, in $(WHEEL_DIR)/build, by this
# Makefile's own rules, with wheel/glibc_floor.h forced into every C file
# (Go's runtime/cgo too): it binds the functions glibc 2.32-2.34 moved into
# libc to their old versions, found in the libpthread, libdl and libresolv
# that the binaries then name (--no-as-needed). The command's start-up goes
# through wheel/libc_start.c (-Wl,--wrap=__libc_start_main). The build fails
# when any binary needs a newer glibc (wheel/check_elf.py); the test asks
# auditwheel for its verdict too.

# ARCH from the command line only: an ARCH in the environment is often the
# kernel's name (x86, arm64).
WHEEL_ARCH  := $(if $(filter command line,$(origin ARCH)),$(ARCH),$(shell uname -m))
DIST        ?= dist
WHEEL_FLOOR := 2.17
WHEEL_PLAT  := manylinux2014_$(WHEEL_ARCH).manylinux_$(subst .,_,$(WHEEL_FLOOR))_$(WHEEL_ARCH)
WHEEL_NAME  := convcache-$(VERSION)-py3-none-$(WHEEL_PLAT).whl
WHEEL_DIR   := $(BUILD)/wheel/$(WHEEL_ARCH)
WHEEL_BUILD := $(WHEEL_DIR)/build
WHEEL_GOARCH := $(if $(filter x86_64,$(WHEEL_ARCH)),amd64,$(if $(filter aarch64,$(WHEEL_ARCH)),arm64))
# Cross tools where ARCH is not this machine's.
WHEEL_CROSS := $(if $(filter $(WHEEL_ARCH),$(shell uname -m)),,$(WHEEL_ARCH)-linux-gnu-)
WHEEL_CC    := $(WHEEL_CROSS)gcc
WHEEL_CXX   := $(WHEEL_CROSS)g++
WHEEL_PIN   := -include $(abspath wheel/glibc_floor.h)
WHEEL_FLAGS := -O2 -Wall -Wextra -Werror $(WHEEL_PIN)
WHEEL_LIBS  := -Wl,--no-as-needed -l:libpthread.so.0 -l:libdl.so.2
# Go's net calls res_search; the command starts through libc_start.a.
WHEEL_GO_LIBS := $(WHEEL_LIBS) -l:libresolv.so.2 -Wl,--wrap=__libc_start_main $(abspath $(WHEEL_DIR))/libc_start.a
WHEEL_PARTS := $(WHEEL_BUILD)/libconvcache.so.$(VERSION) $(WHEEL_BUILD)/libconvcache_preload.so \
               $(WHEEL_BUILD)/libconvcache_engine.so.1 $(WHEEL_BUILD)/convcache

# make's own rules, in a build directory of the wheel's, with its compiler
# and flags (CC and CGO_* reach go build through the environment). The
# command is built -buildmode=pie: with these link flags Go's default
# (non-PIE) link comes out as a PIE with text relocations, which
# wheel/check_elf.py refuses.
WHEEL_MAKE = env GOARCH=$(WHEEL_GOARCH) CGO_ENABLED=1 CGO_CFLAGS="-O2 $(WHEEL_PIN)" \
  CGO_LDFLAGS="$(WHEEL_GO_LIBS)" GOFLAGS=-buildmode=pie \
  $(MAKE) --no-print-directory BUILD=$(WHEEL_BUILD) CC=$(WHEEL_CC) CXX=$(WHEEL_CXX) \
  CFLAGS="$(WHEEL_FLAGS)" LDFLAGS="$(WHEEL_LIBS)"

CLEAN_FILES += $(DIST)
.PHONY: wheel wheel-parts wheel-test

# The floor's pins and shim are in every binary, but no rule of make's own
# knows them: a change to them starts the wheel's build afresh.
WHEEL_FLOOR_STAMP := $(WHEEL_DIR)/.floor-$(shell cat wheel/glibc_floor.h wheel/libc_start.c 2>/dev/null | cksum | cut -d' ' -f1)

wheel-parts:
	@test -n "$(WHEEL_GOARCH)" || { echo "wheel: ARCH=$(WHEEL_ARCH): give x86_64 or aarch64" >&2; exit 2; }
	@command -v $(WHEEL_CC) >/dev/null || { echo "wheel: no $(WHEEL_CC): apt-get install gcc-$(WHEEL_ARCH)-linux-gnu" >&2; exit 1; }
	@test -e $(WHEEL_FLOOR_STAMP) || rm -rf $(WHEEL_DIR)
	@mkdir -p $(WHEEL_DIR) && touch $(WHEEL_FLOOR_STAMP)
	$(WHEEL_CC) $(WHEEL_FLAGS) -c -o $(WHEEL_DIR)/libc_start.o wheel/libc_start.c
	@rm -f $(WHEEL_DIR)/libc_start.a && ar rcs $(WHEEL_DIR)/libc_start.a $(WHEEL_DIR)/libc_start.o
	$(WHEEL_MAKE) $(WHEEL_PARTS) $(WHEEL_BUILD)/include/.stamp

wheel: wheel-parts
	python3 -B wheel/build_wheel.py --build $(WHEEL_BUILD) --stage $(WHEEL_DIR)/stage --out $(DIST) \
	  --version $(VERSION) --plat $(WHEEL_PLAT) --floor $(WHEEL_FLOOR) \
	  --strip $(WHEEL_CROSS)strip --readelf readelf

# auditwheel, in a venv of its own under build/: installed from the kept
# wheels (mk/nvidia.mk's pip_install: fetched once from PyPI, then offline).
AUDITWHEEL_VERSION := 6.8.2
AUDITWHEEL_VENV    := $(BUILD)/auditwheel/venv
AUDITWHEEL_STAMP   := $(AUDITWHEEL_VENV)/.stamp-$(AUDITWHEEL_VERSION)

$(AUDITWHEEL_STAMP):
	@rm -rf $(AUDITWHEEL_VENV) && mkdir -p $(dir $(AUDITWHEEL_VENV))
	python3 -m venv $(AUDITWHEEL_VENV)
	@$(call pip_install,PIP_ROOT_USER_ACTION=ignore $(AUDITWHEEL_VENV)/bin/pip install --quiet --disable-pip-version-check,auditwheel==$(AUDITWHEEL_VERSION),)
	@touch $@

# The test builds its own wheel, under build/ (dist/ is left alone).
WHEEL_TEST_DIST := $(WHEEL_DIR)/dist
TEST_TARGETS += wheel-test

WHEEL_TEST_WHL  := $(WHEEL_TEST_DIST)/$(WHEEL_NAME)

# The test's wheel, built once per make run for wheel-test and docs-test
# (which runs the README's blocks for wheel users against it).
.PHONY: wheel-test-build
wheel-test-build:
	@mkdir -p $(dir $(WHEEL_DIR))
	@$(MAKE) --no-print-directory wheel DIST=$(WHEEL_TEST_DIST) > $(WHEEL_DIR).log 2>&1 || { cat $(WHEEL_DIR).log; exit 1; }
	@grep '^check_elf: [0-9]' $(WHEEL_DIR).log

wheel-test: wheel-test-build $(AUDITWHEEL_STAMP) $(if $(WHEEL_CROSS),,$(STANDINS) $(STANDIN_DIR)/preload_prog $(STANDIN_DIR)/libenable_client.so)
	$(if $(WHEEL_CROSS),@command -v qemu-$(WHEEL_ARCH) >/dev/null || { echo "wheel-test: no qemu-$(WHEEL_ARCH): apt-get install qemu-user" >&2; exit 1; })
	$(if $(WHEEL_CROSS),$(WHEEL_MAKE) $(WHEEL_BUILD)/tests/preload/preload_prog > $(WHEEL_DIR)-test.log 2>&1 || { cat $(WHEEL_DIR)-test.log; exit 1; })
	$(CXX_CLEAN_ENV) $(WHEEL_TEST_ENV) sh tests/wheel/run.sh $(WHEEL_TEST_WHL) $(VERSION) \
	  $(WHEEL_TEST_BUILD) $(WHEEL_DIR) $(AUDITWHEEL_VENV)/bin/auditwheel

# Under qemu-user for a wheel of another architecture: the stand-ins and
# preload_prog built for it, in the wheel's build tree.
ifneq ($(WHEEL_CROSS),)
wheel-test: WHEEL_TEST_ENV = WHEEL_QEMU="qemu-$(WHEEL_ARCH) -L /usr/$(WHEEL_ARCH)-linux-gnu" \
  WHEEL_PLATFORM=manylinux2014_$(WHEEL_ARCH) CC=$(WHEEL_CC) CXX=$(WHEEL_CXX)
wheel-test: WHEEL_TEST_BUILD = $(WHEEL_BUILD)
else
wheel-test: WHEEL_TEST_BUILD = $(BUILD)
endif
