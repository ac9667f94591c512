# The README's two commands: `make figs` and `make test`. Both idempotent.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PROFILE ?= quick
PYTEST_ARGS ?=

.PHONY: figs test install clean-venv

$(PY):
	$(PYTHON) -m venv $(VENV)

# Reinstall when the project metadata or the pins change.
$(STAMP): $(PY) pyproject.toml constraints.txt
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	touch $(STAMP)

install: $(STAMP)

figs: $(STAMP)
	$(PY) -m paper_figs --profile $(PROFILE)

test: $(STAMP)
	$(PY) -m pytest -q $(PYTEST_ARGS)

clean-venv:
	rm -rf $(VENV)
