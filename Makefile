# The two README commands: `make test` and `make demo`. Both install what is missing first.
BUILD_DIR ?= build
JOBS ?= $(shell nproc)
CTEST_ARGS ?=

.PHONY: all deps upstream build test unit demo image fuzz clean

all: build

deps:
	bash test/tools/install-deps.sh

upstream: deps
	bash test/cluster/build-upstream.sh >/dev/null
	ONEQUEUE_K8S=oldest bash test/cluster/build-upstream.sh >/dev/null

$(BUILD_DIR)/build.ninja:
	cmake -S . -B $(BUILD_DIR) -G Ninja

build: deps $(BUILD_DIR)/build.ninja
	cmake --build $(BUILD_DIR) -j $(JOBS)

# Every test: unit, integration (real kube-apiserver, real Slurm) and e2e.
# Two tests at a time: the e2e binaries mostly wait (grace periods, Slurm's requeue delay) and
# each starts its own cluster on free loopback ports, so two run side by side (issue 23: the Slurm
# tests run once per Slurm and the suite must stay inside its time).
CTEST_PARALLEL ?= 2
test: upstream build
	cd $(BUILD_DIR) && ctest --output-on-failure --timeout 1800 -j $(CTEST_PARALLEL) $(CTEST_ARGS)

# Seconds: the pure tests only.
unit: build
	cd $(BUILD_DIR) && ctest --output-on-failure -L unit $(CTEST_ARGS)

# SLURM: 26.05 (the newest release, from a Debian root filesystem), 24.11 or 22.05.
SLURM ?= 26.05
demo: upstream build
	ONEQUEUE_SLURM=$(SLURM) bash test/demo/demo.sh $(BUILD_DIR)

# The container image the chart runs, without a Docker engine (mmdebstrap + umoci; needs root):
# $(BUILD_DIR)/image/oci and $(BUILD_DIR)/image/onequeue-scheduler-<appVersion>.oci.tar.
image: build
	bash deploy/image/build-image.sh $(BUILD_DIR)

# libFuzzer builds of the fuzz targets (clang), in their own build folder.
fuzz: deps
	CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DONEQUEUE_FUZZ=ON
	cmake --build build-fuzz -j $(JOBS)

clean:
	rm -rf $(BUILD_DIR) build-fuzz
