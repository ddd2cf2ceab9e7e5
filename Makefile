# One entry point for users and CI. `make demo` and `make test` install what they need first.
SHELL := /bin/bash
.DEFAULT_GOAL := help

PYTHON_SYSTEM := /usr/bin/python3
TOOLS := .tools
UV := $(TOOLS)/bin/uv
VENV := .venv
RNF := $(VENV)/bin/rnf
UV_VERSION := 0.13.9
APT_PACKAGES := iproute2 iputils-ping ethtool iperf3 socat tcpdump nftables python3-venv python3-pip \
	build-essential pkg-config libzmq3-dev influxdb gnuradio python3-zmq python3-pytest curl debootstrap \
	clang bpftool libbpf-dev
# The datapath needs Rust 1.85 (edition 2024): Debian 12's cargo is 1.63, its cargo-web is 1.85 or later. Used when
# neither cargo nor rustup's ~/.cargo/bin/cargo is there.
RUST_APT_PACKAGES := cargo-web rustc-web
# Expanded when a recipe runs, so that a cargo installed by $(STAMP)/system is found.
CARGO = $(shell command -v cargo || echo $$HOME/.cargo/bin/cargo)
DATAPATH := virtual-cell/datapath/target/release/rnf-cell-dp
RELAY := proxy/relay/target/release/librnf_relay.so
# DCTCP for end-to-end arms (cc = "dctcp") on kernels without tcp_dctcp: a BPF program built against this kernel's BTF.
DCTCP := experiments/bpf/build/rnf_dctcp.bpf.o
BTF := /sys/kernel/btf/vmlinux
STAMP := .make

.PHONY: help setup system-packages python rust lock demo test lint bench bench-latency bench-validation srsran clean

help:
	@echo "make demo    install everything, then run a short reproduction of paper 000 Fig. 11 and the controllers"
	@echo "             against end-to-end CUBIC and BBR on a Markov channel, on the virtual cell (about 3 minutes)"
	@echo "make test    install everything, then run the test suite (as root: it builds network namespaces)"
	@echo "make bench   the benchmarks behind docs/benchmarks.md (SRSRAN_BUILD=... adds the bridge on the real stack)"
	@echo "make bench-latency   the latency suite alone (docs/benchmarks.md; fetches Mahimahi's public drive traces)"
	@echo "make bench-validation   the controllers on the drive traces outside the suite (docs/benchmarks.md, Validation)"
	@echo "make srsran  srsRAN_4G release_23_11 with enb-patches/ built in SRSRAN_DIR ($(SRSRAN_DIR)); prints SRSRAN_BUILD"

setup: $(STAMP)/system $(STAMP)/python $(DATAPATH) $(RELAY) $(if $(wildcard $(BTF)),$(DCTCP))

system-packages: $(STAMP)/system
$(STAMP)/system:
	@if [ "$$(id -u)" != 0 ]; then echo "make: run as root (apt packages, network namespaces)"; exit 1; fi
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(APT_PACKAGES)
	@if ! command -v cargo >/dev/null && [ ! -x $$HOME/.cargo/bin/cargo ]; then \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $(RUST_APT_PACKAGES); fi
	@mkdir -p $(STAMP) && touch $@

python: $(STAMP)/python
$(STAMP)/python: $(STAMP)/system uv.lock pyproject.toml */pyproject.toml | $(UV)
	$(UV) sync --locked --python $(PYTHON_SYSTEM) --all-packages
	@touch $@

$(UV): $(STAMP)/system
	$(PYTHON_SYSTEM) -m venv $(TOOLS) && $(TOOLS)/bin/pip install -q uv==$(UV_VERSION)

# After changing a pyproject.toml: refresh uv.lock and commit it.
lock: | $(UV)
	$(UV) lock --python $(PYTHON_SYSTEM)

rust: $(DATAPATH) $(RELAY)
$(DATAPATH): $(STAMP)/system $(shell find virtual-cell/datapath/src -name '*.rs' 2>/dev/null) virtual-cell/datapath/Cargo.toml
	$(CARGO) build --release --locked --quiet --manifest-path virtual-cell/datapath/Cargo.toml

# Where the kernel exports no BTF (a chroot without /sys, an old kernel) setup skips it, and an arm that asks for
# cc = "dctcp" is refused with the reason (rnf_experiments/congestion.py).
$(DCTCP): $(STAMP)/system experiments/bpf/rnf_dctcp.bpf.c
	mkdir -p $(@D)
	bpftool btf dump file $(BTF) format c > $(@D)/vmlinux.h
	clang -O2 -g -target bpf -Wall -Werror -I $(@D) -c experiments/bpf/rnf_dctcp.bpf.c -o $@
	@# a build registered before stays until unregistered: the next arm that asks registers this one
	-@bpftool struct_ops unregister name rnf_dctcp >/dev/null 2>&1

$(RELAY): $(STAMP)/system $(shell find proxy/relay/src -name '*.rs' 2>/dev/null) proxy/relay/Cargo.toml
	$(CARGO) build --release --locked --quiet --manifest-path proxy/relay/Cargo.toml

# A short reproduction 1 (paper 000 Fig. 11): smvs against itcp at three bandwidth-variation periods; then what the
# testbed is for, on the latency suite's Markov channel: the controllers with their defaults against the papers' laws,
# a plain split and end-to-end CUBIC and BBR, 10 s each.
demo: setup
	$(RNF) run experiments/scenarios/papers/fig11-period.toml --set duration_s=6 --set 'sweep.values=[0.04, 0.4, 4]' \
		--output results
	$(RNF) run experiments/scenarios/latency/markov.toml --set duration_s=10 --output results

# Lint first: a style or type finding fails CI in seconds, before the quarter of an hour of tests. The bridge's tests
# need GNU Radio, which only Debian's interpreter imports (zmq-bridge/README.md).
test: setup lint
	$(CARGO) test --release --locked --quiet --manifest-path virtual-cell/datapath/Cargo.toml
	$(CARGO) test --release --locked --quiet --manifest-path proxy/relay/Cargo.toml
	$(PYTHON_SYSTEM) -m pytest -q zmq-bridge/tests
	$(VENV)/bin/python -m pytest -q

lint: setup
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy

# The controllers against senders that know nothing of the RAN: experiments/scenarios/latency, about 30 minutes.
LATENCY_SUITE := $(wildcard experiments/scenarios/latency/*.toml)
bench-latency: setup
	experiments/scenarios/latency/fetch-traces.sh
	@for scenario in $(LATENCY_SUITE); do $(RNF) run $$scenario --output results || exit 1; done

# The controllers on recorded drive traces no parameter was derived from: docs/benchmarks.md, "Validation", about
# 80 minutes (the first 45 s of six traces, twelve later stretches and other recordings, then eight more).
bench-validation: setup
	experiments/scenarios/latency/fetch-traces.sh
	$(RNF) run experiments/scenarios/validation-traces.toml --output results
	$(RNF) run experiments/scenarios/validation-stretches.toml --output results
	$(RNF) run experiments/scenarios/validation-midpoints.toml --output results

bench: setup bench-latency
	$(RNF) run experiments/scenarios/web-beside-download.toml --output results
	$(RNF) run experiments/scenarios/second-flow-markov.toml --output results
	$(VENV)/bin/python -m rnf_cell.bench
	$(VENV)/bin/python -m rnf_bridge.bench
	$(VENV)/bin/python -m rnf_proxy.bench
	@if [ -n "$$SRSRAN_BUILD" ]; then $(VENV)/bin/python -m rnf_experiments.cells.bench; \
	else echo "make bench: SRSRAN_BUILD is not set: the bridge on the real stack is not measured"; fi

# srsRAN 4G with the patch series, outside the repository: SRSRAN_DIR holds the clone (srsRAN_4G/) and the build
# tree (build/). As root, the build packages first (enb-patches/README.md, Build; libuhd-dev adds USRP support when
# installed beforehand). enb-patches/build.sh clones SRSRAN_REPO, applies the series, builds and runs the series'
# unit tests; run again, it resumes or finds nothing to do. Neither `test` nor `demo` needs it.
SRSRAN_DIR ?= $(abspath ../srsran)
SRSRAN_REPO ?= https://github.com/srsran/srsRAN_4G.git
SRSRAN_APT_PACKAGES := build-essential cmake git pkg-config libfftw3-dev libmbedtls-dev libboost-program-options-dev \
	libconfig++-dev libsctp-dev libzmq3-dev
srsran:
	@if [ "$$(id -u)" = 0 ]; then \
		missing="$$(for p in $(SRSRAN_APT_PACKAGES); do dpkg-query -W -f='$${Status}\n' $$p 2>/dev/null \
			| grep -q 'ok installed' || echo $$p; done)"; \
		if [ -n "$$missing" ]; then apt-get update -qq && \
			DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; fi; \
	else echo "make srsran: not root, so the build packages are not installed: $(SRSRAN_APT_PACKAGES)"; fi
	enb-patches/build.sh --repo '$(SRSRAN_REPO)' --dir '$(SRSRAN_DIR)'

clean:
	rm -rf $(STAMP) $(VENV) $(TOOLS) virtual-cell/datapath/target proxy/relay/target
