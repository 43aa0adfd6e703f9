# Python package (python/toolrl): tests against a real redis-server, with
# Debian's interpreter (/usr/bin/python3; the first python3 on PATH may be another).
PYTHON := /usr/bin/python3
PY_APT := python3-numpy python3-redis python3-pytest python3-torch

.PHONY: python-deps python-test

# $(call apt_ensure,PACKAGES,WHO): install the Debian PACKAGES not yet
# installed, saying WHO asked (one recipe line).
define apt_ensure
@missing=""; for p in $(1); do dpkg -s $$p >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then echo "$(2): installing$$missing with apt-get"; \
		apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; fi
endef

python-deps: redis
	$(call apt_ensure,$(PY_APT),python)

## python-test: the Python package's tests (python/tests) with /usr/bin/python3 against a real redis-server
python-test: python-deps
	cd python && $(PYTHON) -m pytest -q tests

TEST_DEPS += python-test

python-test: build

.PHONY: python-demo
## python-demo: build, roll out 2 prompts x 4 of models/calc, compute advantages, print a verl batch's shapes
python-demo: build python-deps
	$(PYTHON) python/demo.py
