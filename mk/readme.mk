# The README's commands and snippets, run as a new user would run them
# (tests/readme/readme_test.py says how), so that the README cannot drift
# from what works. Part of `make test`; about half a minute.
#
#   make test-readme

.PHONY: test-readme
test: test-readme

test-readme: $(LIB) | setup
	python3 tests/readme/readme_test.py README.md
