# Docs that compile as printed: every C, C++ and shell block of README.md and
# docs/*.md is built and run (tests/docs/check_docs.py says how, and how a
# block says it is a fragment or needs a GPU), and the front page's limits,
# its make test prerequisites and the docs' links are checked. The blocks
# for wheel users run against the wheel (built by wheel-test-build,
# mk/wheel.mk), installed in a fresh venv.
#
#   make docs-test      (part of make test; a few seconds once the wheel is built)

.PHONY: docs-test
docs-test: $(LIB) $(BUILD)/include/.stamp $(BUILD)/convcache wheel-test-build
	@echo "== docs: every C, C++ and shell block of README.md and docs/*.md, built and run"
	@python3 tests/docs/check_docs.py --make "$(MAKE)" --wheel $(WHEEL_TEST_WHL)

TEST_TARGETS += docs-test
