# Docs that compile as printed: every C, C++ and shell block of README.md and
# docs/*.md is built and run (tests/docs/check_docs.py says how, and how a
# block says it is a fragment or needs a GPU), and the front page's limits
# and the docs' links are checked.
#
#   make docs-test      (part of make test; a few seconds)

.PHONY: docs-test
docs-test: $(LIB) $(BUILD)/include/.stamp
	@echo "== docs: every C, C++ and shell block of README.md and docs/*.md, built and run"
	@python3 tests/docs/check_docs.py --make "$(MAKE)"

TEST_TARGETS += docs-test
