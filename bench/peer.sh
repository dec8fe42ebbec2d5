#!/usr/bin/env bash
# One timed command of the benchmark: checks every image listed in IMAGES (one
# reference a line) the way a script without pullcheck would. bench/run.sh runs
# it under hyperfine; it fails if any image is not found.
#
#   bench/peer.sh TOOL IMAGES
#
# TOOL:
#   skopeo-seq   `skopeo inspect --raw`, one image after the other
#   skopeo-par8  the same, 8 at a time (`xargs -P 8`)
#   docker-seq   `docker manifest inspect --insecure`, one image after the other
#   curl-floor   the requests the protocol needs and nothing else: one ping, one
#                token for every repository, then one HEAD per image, 16 at a time
#                over keep-alive connections (one curl process for the ping, one for
#                the token, one for all the HEADs)
#
# Environment (exported by bench/run.sh):
#   BENCH_USER, BENCH_PASSWORD  credentials (unset: anonymous)
#   BENCH_REGISTRY_URL          http://127.0.0.1:PORT (curl-floor)
#   DOCKER_CONFIG               a private directory whose config.json holds the
#                               credentials, as `docker login` writes it
set -euo pipefail

tool=${1:?usage: peer.sh TOOL IMAGES}
images=${2:?usage: peer.sh TOOL IMAGES}

# BENCH_SKOPEO_TLS: skopeo's TLS flags (default --tls-verify=false; the WAN benchmark
# passes --cert-dir DIR with its CA).
read -r -a skopeo_tls <<<"${BENCH_SKOPEO_TLS:---tls-verify=false}"
skopeo_auth=(--no-creds)
if [ -n "${BENCH_USER:-}" ]; then
  skopeo_auth=(--creds "$BENCH_USER:$BENCH_PASSWORD")
fi

accept='application/vnd.oci.image.index.v1+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.docker.distribution.manifest.v2+json'

case "$tool" in
  skopeo-seq)
    while read -r ref; do
      skopeo inspect --raw "${skopeo_tls[@]}" "${skopeo_auth[@]}" "docker://$ref" >/dev/null
    done <"$images"
    ;;
  skopeo-par8)
    # xargs exits 123 if any skopeo failed.
    sed 's|^|docker://|' "$images" |
      xargs -P 8 -I '{}' skopeo inspect --raw "${skopeo_tls[@]}" "${skopeo_auth[@]}" '{}' >/dev/null
    ;;
  docker-seq)
    while read -r ref; do
      docker manifest inspect --insecure "$ref" >/dev/null
    done <"$images"
    ;;
  curl-floor)
    url=${BENCH_REGISTRY_URL:?BENCH_REGISTRY_URL is not set}
    host=${url#http://}
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    # Requests are built from one curl config file each, so that N is not
    # limited by the command line.
    challenge=$(curl -s -o /dev/null -D - "$url/v2/" | tr -d '\r' | sed -n 's/^[Ww][Ww][Ww]-[Aa]uthenticate: *//p')
    case "$challenge" in
      Bearer*)
        realm=$(printf '%s' "$challenge" | sed -n 's/.*realm="\([^"]*\)".*/\1/p')
        service=$(printf '%s' "$challenge" | sed -n 's/.*service="\([^"]*\)".*/\1/p')
        {
          printf 'url = "%s"\n' "$realm"
          printf 'get\n'
          printf 'data-urlencode = "service=%s"\n' "$service"
          sed "s|^$host/\([^:@]*\).*|data-urlencode = \"scope=repository:\1:pull\"|" "$images"
        } >"$work/token.cfg"
        token=$(curl -sf -u "$BENCH_USER:$BENCH_PASSWORD" -K "$work/token.cfg" |
          sed -n 's/.*"token":"\([^"]*\)".*/\1/p')
        [ -n "$token" ] || { echo "curl-floor: no token" >&2; exit 1; }
        printf 'header = "Authorization: Bearer %s"\n' "$token" >"$work/heads.cfg"
        ;;
      "") : >"$work/heads.cfg" ;;
      *) echo "curl-floor: unexpected challenge: $challenge" >&2; exit 1 ;;
    esac
    # reference HOST/NAME:TAG -> URL .../v2/NAME/manifests/TAG
    sed "s|^$host/\([^:@]*\)[:@]\(.*\)|url = \"$url/v2/\1/manifests/\2\"\noutput = \"/dev/null\"|" "$images" >>"$work/heads.cfg"
    curl -s --no-progress-meter --fail --head --parallel --parallel-max 16 -H "Accept: $accept" -K "$work/heads.cfg"
    ;;
  *)
    echo "peer.sh: unknown tool $tool" >&2
    exit 2
    ;;
esac
