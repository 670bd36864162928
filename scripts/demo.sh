#!/usr/bin/env bash
# The main job: build opchain and generate text with the small Qwen3-MoE that ships in the repository.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
scripts/build.sh release
build/apps/opchain/opchain generate --model models/trained-qwen3-moe --prompt "${1:-The cat}" --temperature 0
