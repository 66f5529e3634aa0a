# Builds the generic task runtime for linux/amd64 and linux/arm64 into one image index.
# Run from the repository root (paths below are relative to where bake runs), after building
# the wheel it installs into dist/:
#   python -m pip wheel --no-deps --wheel-dir dist .
#   REGISTRY=ghcr.io/my-org TAG=0.1.0-py3.12 PYTHON_VERSION=3.12 \
#     docker buildx bake -f images/docker-bake.hcl --push
# `armada-flyte image build` runs the same build with `docker buildx build` and absolute paths.

variable "REGISTRY" {
  default = "localhost:5000"
}

variable "IMAGE" {
  default = "armada-flyte-runtime"
}

variable "PYTHON_VERSION" {
  default = "3.11"
}

# The image Python runs on; the default is the Dockerfile's own stage of the official Python
# image. Without Docker Hub, give the Debian base of scripts/build-base-image.sh.
variable "BASE_IMAGE" {
  default = "python-base"
}

variable "TAG" {
  default = "0.1.0-py${PYTHON_VERSION}"
}

group "default" {
  targets = ["runtime"]
}

target "runtime" {
  context    = "images"
  dockerfile = "Dockerfile"
  # Install armada-flyte from the wheel of this checkout in dist/ rather than from the package index.
  contexts = {
    "armada-flyte-wheel" = "dist"
  }
  args = {
    PYTHON_VERSION    = PYTHON_VERSION
    BASE_IMAGE        = BASE_IMAGE
    ARMADA_FLYTE_FROM = "wheel"
  }
  platforms = ["linux/amd64", "linux/arm64"]
  tags      = ["${REGISTRY}/${IMAGE}:${TAG}"]
}
