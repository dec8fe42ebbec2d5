#!/usr/bin/env bash
# Installs the Debian packages the tests and the demo need: the CNCF distribution
# registry (docker-registry), htpasswd (apache2-utils), openssl, the CA bundle, curl, and Go
# (golang-go) for the Vela worker package in integrations/vela, and the container runtimes
# the differential suite compares pullcheck with (containerd with ctr, podman; state under
# /tmp, started by the test). skopeo is needed only by the benchmark; bench/run.sh installs
# it itself.
set -euo pipefail
need=()
command -v docker-registry >/dev/null 2>&1 || need+=(docker-registry)
command -v htpasswd >/dev/null 2>&1 || need+=(apache2-utils)
command -v openssl >/dev/null 2>&1 || need+=(openssl)
# curl: the server's HTTP/2 early-answer test runs Debian's curl (7.88) against it.
command -v curl >/dev/null 2>&1 || need+=(curl)
[ -e /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
command -v go >/dev/null 2>&1 || need+=(golang-go)
command -v containerd >/dev/null 2>&1 || need+=(containerd)
command -v podman >/dev/null 2>&1 || need+=(podman)
if [ "${#need[@]}" -gt 0 ]; then
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get update -qq
  $sudo apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
