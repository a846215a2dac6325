# Runs shell blocks of the docs as written, so CI tries what a user types (sourced: `source .ci/readme-steps.sh`).
# A block is tagged by the line `<!-- ci: TAG -->` before it, in README.md or any Markdown file under docs/
# (today docs/containers.md); a tag must appear in exactly one file, once.
#   hangar_readme_file TAG    prints the file (relative to the checkout) that holds the tag
#   hangar_readme_block TAG   prints the ```sh block that follows the line `<!-- ci: TAG -->`
#   hangar_readme_steps TAG   runs that block in the calling shell (its exports and background jobs stay there)
# `hangar` in a block is this checkout's bin/hangar.js. With HANGAR_README_PODMAN_STORAGE=DIR, `podman` in a block
# keeps its storage under DIR (--root/--runroot), so a CI run never touches the machine's own images.
_hangar_readme_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)

hangar_readme_file() {
  local files
  files=$(cd "$_hangar_readme_root" && grep -rlxF --include='*.md' -- "<!-- ci: $1 -->" README.md docs)
  if [ -z "$files" ]; then
    echo "no file in README.md or docs/ has a block tagged <!-- ci: $1 -->" >&2
    return 1
  fi
  if [ "$(printf '%s\n' "$files" | wc -l)" -ne 1 ] || [ "$(grep -cxF -- "<!-- ci: $1 -->" "$_hangar_readme_root/$files")" -ne 1 ]; then
    echo "<!-- ci: $1 --> is tagged more than once:" $files >&2
    return 1
  fi
  printf '%s\n' "$files"
}

hangar_readme_block() {
  local file
  file=$(hangar_readme_file "$1") || return 1
  awk -v tag="<!-- ci: $1 -->" '
    $0 == tag { want = 1; next }
    want && !inside && /^```/ { inside = 1; next }
    inside && /^```/ { exit }
    inside { print }
  ' "$_hangar_readme_root/$file"
}

hangar() { node "$_hangar_readme_root/bin/hangar.js" "$@"; }

hangar_readme_steps() {
  local file block
  file=$(hangar_readme_file "$1") || return 1
  block=$(hangar_readme_block "$1")
  if [ -z "$block" ]; then
    echo "$file: no \`\`\`sh block follows <!-- ci: $1 -->" >&2
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
  echo "$file <!-- ci: $1 -->:" >&2
  printf '%s\n' "$block" | sed 's/^/  | /' >&2
  eval "$block"
  local rc=$?
  PATH=$saved_path
  return $rc
}
