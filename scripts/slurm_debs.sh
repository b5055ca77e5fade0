#!/usr/bin/env bash
# slurm_debs.sh DIR: downloads Debian's Slurm and munge packages, and the packages of every
# shared library their programs and plugins load (libc6 and the compiler's runtime left out: every
# machine has them), into DIR, for a machine that has no package registry (the GPU machine of
# the device tool). Run it on a Debian 12 machine where apt-get works; it installs slurmctld,
# slurmd, slurm-client and munge here first when they are missing (root), because the library
# list is read from the installed programs (ldd).
#
#   scripts/slurm_debs.sh .slurm-debs   # ~5 MB, 20 packages; .gitignore'd: travels only when carried
#
# On the GPU machine (carry .slurm-debs): scripts/h200_scale.sh unpacks them with dpkg -x into a
# prefix of its own (never into /) and runs the daemons from there (slurm_local.sh SLURM_PREFIX).
set -euo pipefail
dir=${1:?usage: slurm_debs.sh DIR}
pkgs="slurmctld slurmd slurm-client slurm-wlm-basic-plugins munge libmunge2"
missing=""
for p in $pkgs; do dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing="$missing $p"; done
if [ -n "$missing" ]; then
  [ "$(id -u)" = 0 ] || { echo "slurm_debs.sh: install$missing first (root)" >&2; exit 2; }
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
fi
# every ELF file of the packages (programs, libslurm, plugins), and the libraries they load
elves=$(dpkg -L $pkgs | while read -r f; do
  [ -f "$f" ] && [ ! -L "$f" ] && head -c 4 "$f" 2>/dev/null | grep -q ELF && echo "$f" || true; done | sort -u)
libs=$(for f in $elves; do ldd "$f" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// {print $3}'; done | sort -u)
deps=$(for l in $libs; do dpkg -S "$(readlink -f "$l")" 2>/dev/null || dpkg -S "$l" 2>/dev/null || true; done |
  cut -d: -f1 | sort -u | grep -Ev '^(libc6|libgcc-s1|libstdc\+\+6|libcrypt1|libselinux1|libzstd1|liblzma5|libgpg-error0|libgcrypt20|libcap2|libsystemd0|zlib1g)$' || true)
mkdir -p "$dir"
cd "$dir"
# shellcheck disable=SC2086
apt-get download $pkgs $deps >/dev/null
echo "slurm_debs.sh: $(ls ./*.deb | wc -l) packages, $(du -sh . | cut -f1) in $(pwd):"
ls ./*.deb | sed 's#^\./#  #'
