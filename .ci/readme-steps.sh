# Runs shell blocks of README.md as written, so CI tries what a user types (sourced: `source .ci/readme-steps.sh`).
#   hangar_readme_block TAG   prints the ```sh block that follows the line `<!-- ci: TAG -->` in README.md
#   hangar_readme_steps TAG   runs that block in the calling shell (its exports and background jobs stay there)
# `hangar` in a block is this checkout's bin/hangar.js. With HANGAR_README_PODMAN_STORAGE=DIR, `podman` in a block
# keeps its storage under DIR (--root/--runroot), so a CI run never touches the machine's own images.
_hangar_readme_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

hangar_readme_block() {
  awk -v tag="<!-- ci: $1 -->" '
    $0 == tag { want = 1; next }
    want && !inside && /^```/ { inside = 1; next }
    inside && /^```/ { exit }
    inside { print }
  ' "$_hangar_readme_root/README.md"
}

hangar() { node "$_hangar_readme_root/bin/hangar.js" "$@"; }

hangar_readme_steps() {
  local block
  block=$(hangar_readme_block "$1")
  if [ -z "$block" ]; then
    echo "README.md has no block tagged <!-- ci: $1 -->" >&2
    return 1
  fi
  local saved_path=$PATH
  if [ -n "${HANGAR_README_PODMAN_STORAGE:-}" ]; then
    # A wrapper (not a function) so that `podman ... &` leaves podman's own pid in $!.
    mkdir -p "$HANGAR_README_PODMAN_STORAGE/bin"
    printf '#!/bin/sh\nexec %s --root "%s/storage" --runroot "%s/run" "$@"\n' "$(command -v podman)" "$HANGAR_README_PODMAN_STORAGE" "$HANGAR_README_PODMAN_STORAGE" >"$HANGAR_README_PODMAN_STORAGE/bin/podman"
    chmod +x "$HANGAR_README_PODMAN_STORAGE/bin/podman"
    PATH="$HANGAR_README_PODMAN_STORAGE/bin:$PATH"
  fi
  echo "README.md <!-- ci: $1 -->:" >&2
  printf '%s\n' "$block" | sed 's/^/  | /' >&2
  eval "$block"
  local rc=$?
  PATH=$saved_path
  return $rc
}
