# Shared by scripts/test and scripts/run (sourced, not run).

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
jobs="$(nproc 2>/dev/null || echo 2)"

# ccache: one cache per user under ~/.cache so repeated runs on a machine hit it. In CI the clone
# may live in a new folder each time; hashing paths relative to the clone lets those runs share it.
setup_ccache() {
  cmake_launcher_args=()
  if command -v ccache >/dev/null 2>&1; then
    export CCACHE_DIR="${CCACHE_DIR:-$HOME/.cache/ccache}"
    export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$repo_root}"
    if [[ "${CI:-}" == "true" ]]; then
      export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-1}"
    fi
    mkdir -p "$CCACHE_DIR"
    cmake_launcher_args=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_CUDA_COMPILER_LAUNCHER=ccache)
  fi
}

# Prints a stage header with the time since the script started.
stage() {
  printf '\n==== [%4ss] %s\n' "$SECONDS" "$*"
}
