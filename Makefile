# Wraps the CMake build. `make run` runs the default job, `make test` runs every test.
# Run as root, each target first installs the Debian packages the build needs (if missing).
BUILD   ?= build
JOBS    ?= $(shell nproc 2>/dev/null || echo 2)
GPU     ?=
RUN_ARGS ?= campaigns/smoke.lua $(if $(GPU),--gpu $(GPU),)
# The one list of Debian packages the build and its tests need (.ci/run installs through it too);
# python3 and libpython3-dev for the embedded interpreter (torch, Triton; opened by dlopen at run
# time). DEB_EXTRA adds optional ones (CI: chromium for the report test, python3-pip for triton).
DEB_PKGS := cmake build-essential pkg-config liblua5.4-dev lua-filesystem-dev lua-cjson-dev \
            libyaml-dev lua-busted python3 libpython3-dev $(DEB_EXTRA)

.PHONY: all build run test test-gpu test-slurm deps clean

all: build

deps:
	@missing=""; for p in $(DEB_PKGS); do \
	  dpkg-query -W -f='$${Status}' $$p 2>/dev/null | grep -q 'ok installed' || missing="$$missing $$p"; \
	done; \
	if [ -n "$$missing" ]; then \
	  if [ "$$(id -u)" = 0 ]; then \
	    echo "installing:$$missing"; \
	    { DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	      DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; } || \
	    echo "could not install:$$missing (no package registry?); building with what is here"; \
	  else \
	    echo "missing Debian packages:$$missing (run 'make deps' as root, or install them)"; \
	  fi; \
	fi

$(BUILD)/CMakeCache.txt:
	cmake -S . -B $(BUILD) -DCMAKE_BUILD_TYPE=RelWithDebInfo

build: deps $(BUILD)/CMakeCache.txt
	cmake --build $(BUILD) -j $(JOBS)

run: build
	./$(BUILD)/tilebench run $(RUN_ARGS)

test: build
	cd $(BUILD) && ctest --output-on-failure -j $(JOBS)

test-gpu: build
	cd $(BUILD) && ctest --output-on-failure -L gpu

# tests/slurm: a one-node Slurm cluster on localhost (root; Debian's slurmctld, slurmd,
# slurm-client and munge: .ci/run installs them). The tests skip (77) unless asked for.
test-slurm: build
	cd $(BUILD) && TB_SLURM_TEST=1 ctest --output-on-failure -L slurm

clean:
	rm -rf $(BUILD)
