#!/usr/bin/env bash
# Makes the benchmark's own CA and a server certificate for 127.0.0.1 signed by it,
# for the registry served over TLS in bench/run.sh --wan:
#
#   bench/wan-certs.sh DIR
#
# DIR/ca.pem, DIR/ca.key        the CA (EC P-256, 2 days)
# DIR/server.pem, DIR/server.key a certificate for IP 127.0.0.1 (EC P-256, 2 days)
# DIR/skopeo/ca.crt             the CA where `skopeo --cert-dir DIR/skopeo` looks
set -euo pipefail
dir=${1:?usage: wan-certs.sh DIR}
mkdir -p "$dir/skopeo"
cd "$dir"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -subj "/CN=pullcheck bench CA" -keyout ca.key -out ca.pem \
  -addext "basicConstraints=critical,CA:TRUE" -addext "keyUsage=critical,keyCertSign,cRLSign" 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes \
  -subj "/CN=127.0.0.1" -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\nbasicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\n' >server.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
  -extfile server.ext -out server.pem 2>/dev/null
rm -f server.csr server.ext ca.srl
cp ca.pem skopeo/ca.crt
