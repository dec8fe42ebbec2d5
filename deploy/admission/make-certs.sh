#!/bin/sh
# Makes a CA and a serving certificate for the admission webhook's Service, and a copy
# of webhook.yaml with the CA in every caBundle.
#
#   deploy/admission/make-certs.sh OUTDIR [SERVICE] [NAMESPACE]
#
# SERVICE defaults to pullcheck-admission, NAMESPACE to pullcheck. Writes, in OUTDIR:
#   ca.crt, ca.key      the CA (keep ca.key private, or delete it)
#   tls.crt, tls.key    the serving certificate for SERVICE.NAMESPACE.svc
#   webhook.yaml        webhook.yaml with caBundle filled in and <pullcheck-namespace>
#                       replaced by NAMESPACE
# Then:
#   kubectl -n NAMESPACE create secret tls pullcheck-admission-tls \
#     --cert=OUTDIR/tls.crt --key=OUTDIR/tls.key
#   kubectl apply -f OUTDIR/webhook.yaml
# Needs openssl (1.1.1 or later). The certificates are valid for DAYS days (default 365).
set -eu

out=${1:?usage: make-certs.sh OUTDIR [SERVICE] [NAMESPACE]}
service=${2:-pullcheck-admission}
namespace=${3:-pullcheck}
days=${DAYS:-365}
here=$(cd "$(dirname "$0")" && pwd)
host="$service.$namespace.svc"

mkdir -p "$out"
umask 077
openssl req -x509 -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
  -days "$days" -subj "/CN=pullcheck admission CA" \
  -addext "basicConstraints=critical,CA:TRUE" \
  -addext "keyUsage=critical,keyCertSign,cRLSign" \
  -keyout "$out/ca.key" -out "$out/ca.crt" 2>/dev/null
openssl req -new -nodes -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
  -subj "/CN=$host" -keyout "$out/tls.key" -out "$out/tls.csr" 2>/dev/null
ext="$out/tls.ext"
printf 'basicConstraints=critical,CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=DNS:%s,DNS:%s.%s,DNS:%s.cluster.local\n' \
  "$host" "$service" "$namespace" "$host" >"$ext"
openssl x509 -req -in "$out/tls.csr" -CA "$out/ca.crt" -CAkey "$out/ca.key" \
  -CAcreateserial -days "$days" -extfile "$ext" -out "$out/tls.crt" 2>/dev/null
rm -f "$out/tls.csr" "$ext" "$out/ca.srl"
chmod 644 "$out/ca.crt" "$out/tls.crt"

bundle=$(base64 <"$out/ca.crt" | tr -d '\n')
sed -e "s|caBundle: \"\"|caBundle: \"$bundle\"|" \
  -e "s|<pullcheck-namespace>|$namespace|g" \
  "$here/webhook.yaml" >"$out/webhook.yaml"
echo "made $out/ca.crt, $out/tls.crt and $out/tls.key for $host; $out/webhook.yaml has the caBundle" >&2
