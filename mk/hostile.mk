# The hostile-file harness (tests/hostile): every class of planted cache
# file (internal/hostile) through the library, the command-line tool and the
# LD_PRELOAD interposer, each run under a memory limit of 64 MiB + 40 x the
# file's size and a time limit of 10 s + 2 s per MiB (see
# tests/hostile/harness/main.go). `make test` runs it.
#
#   make hostile-test                    the whole table
#   make hostile-test HOSTILE_ARGS='-only bomb-many,sync-storm'
#   make hostile-files DIR=somewhere     write every class for other tools

HOSTILE_DIR  := $(BUILD)/tests/hostile
HOSTILE_BINS := $(HOSTILE_DIR)/libprog $(HOSTILE_DIR)/rss $(HOSTILE_DIR)/harness
HOSTILE_SRC  := $(shell find internal/hostile tests/hostile -name '*.go' ! -name '*_test.go' 2>/dev/null)

TEST_TARGETS += hostile-test

$(HOSTILE_DIR)/libprog: tests/hostile/libprog.c tests/check.h $(LIB) $(BUILD)/include/.stamp
	@mkdir -p $(HOSTILE_DIR)
	$(CC) $(CFLAGS) -o $@ $< $(LINK_CC)

$(HOSTILE_DIR)/rss: tests/hostile/rss.c
	@mkdir -p $(HOSTILE_DIR)
	$(CC) $(CFLAGS) -o $@ $<

$(HOSTILE_DIR)/harness: $(HOSTILE_SRC) go.mod go.sum
	@mkdir -p $(HOSTILE_DIR)
	$(GO) build -o $@ ./tests/hostile/harness

.PHONY: hostile-test hostile-files
hostile-test: $(HOSTILE_BINS) $(LIB) $(CLI) $(PRELOAD_LIB) $(STANDINS) $(STANDIN_DIR)/preload_prog
	$(HOSTILE_DIR)/harness -build $(BUILD) $(HOSTILE_ARGS)

hostile-files:
	@test -n "$(DIR)" || { echo "usage: make hostile-files DIR=directory" >&2; exit 2; }
	$(GO) run ./tests/hostile/gen $(DIR)
